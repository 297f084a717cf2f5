"""tanh_scaler_constant: the bug.

Source: https://github.com/numaproj/numalogic/pull/153
TanhScaler: tanh(0.01 * (x - mean) / std) for a constant time series divides by a zero std and
outputs NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(20, 2)

z = 0.5 * (torch.tanh(0.01 * (x - x.mean(dim=0)) / x.std(dim=0)) + 1)
