"""log_cosh_loss_fixed: the fix.

The log-cosh regression loss written as log(cosh(pred - target)). cosh overflows float32 for |x|
above about 89.4, so once the predictions are far off (a large learning rate, or the weights
growing) the loss is inf.
Fix: the stable identity log cosh(d) = d + softplus(-2d) - log 2 (for d of either sign).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def log_cosh_loss(pred, target):
    d = pred - target
    return (d + F.softplus(-2.0 * d) - math.log(2.0)).mean()


x = torch.randn(50, 5)
y = x @ torch.randn(5) + 0.1 * torch.randn(50)

model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(5):
    loss = log_cosh_loss(model(x).squeeze(1), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
