"""standardize_zero_std: the bug.

Source: https://github.com/mllam/neural-lam/issues/136
State standardisation (x - mean) / std: a field whose values are all equal (no rain) has std 0
and the whole prediction becomes NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(16, 3)

z = (x - x.mean(dim=0)) / x.std(dim=0)
