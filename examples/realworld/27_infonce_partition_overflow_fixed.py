"""infonce_partition_overflow_fixed: the fix.

Source: https://github.com/huggingface/sentence-transformers/issues/2774
Contrastive loss with exp(s / tau) and tau = 0.01: the partition function overflows; the thread
rewrites it with a shifted (log-sum-exp) form.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

q = F.normalize(torch.randn(4, 8), dim=1)
d = F.normalize(torch.randn(4, 8), dim=1)
tau = 0.01

sim = (q @ d.t()) / tau
loss = -(torch.log_softmax(sim, dim=1).diagonal()).mean()
