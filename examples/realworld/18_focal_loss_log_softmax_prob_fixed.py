"""focal_loss_log_softmax_prob_fixed: the fix.

Source: https://github.com/kornia/kornia/pull/64
Focal loss -(1 - p)^gamma * log(p) with p a softmax probability: p underflowing to 0 gives -inf
(kornia's fix of the -inf issue).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(6, 5) * 6

logp = torch.log_softmax(logits, dim=1)
p = torch.softmax(logits, dim=1)
loss = (-(1 - p).pow(2.0) * logp).mean()
