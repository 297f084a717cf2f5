"""ipw_propensity_weights: the bug.

Inverse propensity weighting for a treatment-effect model: a propensity head p = sigmoid(g(x))
is trained alongside, and the outcome loss is weighted by t / p + (1 - t) / (1 - p). As the
propensity model grows confident p saturates to exactly 0 or 1, and 1 / (1 - p) or t / p is inf
(0 / 0 = NaN for the other arm).
Fix: clip the propensity to [0.01, 0.99] (the usual trimming) before inverting it.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(64, 5)
t = (torch.rand(64) < torch.sigmoid(x[:, 0])).float()
y = x[:, 1] + 2.0 * t + 0.1 * torch.randn(64)

propensity = nn.Linear(5, 1)
outcome = nn.Linear(6, 1)
opt = torch.optim.Adam(list(propensity.parameters()) + list(outcome.parameters()), lr=1e-2)

for step in range(5):
    g = propensity(x).squeeze(1)
    p = torch.sigmoid(g)
    w = t / p + (1 - t) / (1 - p)
    pred = outcome(torch.cat([x, t[:, None]], dim=1)).squeeze(1)
    loss = (w.detach() * (pred - y) ** 2).mean() + F.binary_cross_entropy_with_logits(g, t)
    loss.backward()
    opt.step()
    opt.zero_grad()
