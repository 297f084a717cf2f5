"""gumbel_log_log_uniform_fixed: the fix.

Source: https://github.com/pytorch/pytorch/pull/4517
Gumbel sampling loc - scale * log(-log(U)) with U uniform in [0, 1): U = 0 gives log(inf) and
the sample is -inf (raised in review; fixed by keeping U away from 0).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

u = torch.rand(10)
loc = torch.zeros(10)

u = u.clamp(1e-6, 1 - 1e-6)
g = loc - torch.log(-torch.log(u))
