"""sac_tanh_scale_log_fixed: the fix.

Source: https://github.com/cpnota/autonomous-learning-library/issues/139
SAC policy: log(1 - action^2 + 1e-6) on the scaled action; with a tanh scale above 1 the
argument goes negative and log gives NaN (the fix uses tanh(raw) itself).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

raw = torch.randn(8, 2)
scale = 2.0

corr = torch.log(1 - torch.tanh(raw).pow(2) + 1e-6).sum(dim=1)
