"""pearson_corr_loss: the bug.

A correlation loss, 1 - cov(pred, target) / (std(pred) std(target)), as used for signal and
ranking regression. If the model collapses to a constant prediction (all hidden ReLUs dead, or
the weights decayed to zero) std(pred) is exactly 0 and so is the covariance: 0 / 0 = NaN.
Fix: an epsilon in the denominator.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def pearson_loss(pred, target):
    pred_c = pred - pred.mean()
    target_c = target - target.mean()
    cov = (pred_c * target_c).mean()
    corr = cov / (pred.std(unbiased=False) * target.std(unbiased=False))
    return 1 - corr


x = torch.randn(40, 5)
y = x[:, 0] - 0.5 * x[:, 1] + 0.1 * torch.randn(40)

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = pearson_loss(model(x).squeeze(1), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
