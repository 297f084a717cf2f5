"""poisson_exp_rate: the bug.

Poisson regression for counts with the canonical log link: rate = exp(linear predictor), loss
rate - y log(rate). The linear predictor is unbounded: above about 88.7 exp overflows to inf
(the loss is inf, and later NaN), and below about -103 the rate underflows to 0 so log(rate) is
-inf and 0 * -inf is NaN for zero counts.
Fix: a softplus link with a floor, rate = softplus(z) + 1e-6, which neither overflows nor
reaches zero.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(50, 4)
counts = torch.randint(0, 8, (50,)).float()

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(5):
    rate = torch.exp(model(x).squeeze(1))
    loss = (rate - counts * torch.log(rate)).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
