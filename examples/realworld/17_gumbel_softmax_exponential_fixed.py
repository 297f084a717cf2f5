"""gumbel_softmax_exponential_fixed: the fix.

Source: https://github.com/pytorch/pytorch/pull/20179
gumbel_softmax draws -log(Exponential(1)); a sample of exactly 0 (seen on CUDA) gives inf noise
and NaN after the softmax.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(4, 6)
exp_sample = torch.empty(4, 6).exponential_()

gumbels = -exp_sample.clamp_min(1e-10).log()
y = torch.softmax(logits + gumbels, dim=-1)
