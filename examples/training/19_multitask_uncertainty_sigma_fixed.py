"""multitask_uncertainty_sigma_fixed: the fix.

Multi-task loss weighting by learned task uncertainty, sum_i L_i / (2 sigma_i^2) + log sigma_i,
with sigma a raw trainable parameter initialised to 1. The optimiser can move sigma to 0 or
below: the quotient is then inf and log(sigma) is -inf or NaN.
Fix: a positive parametrisation, sigma = softplus(raw) + 1e-3.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class UncertaintyWeighting(nn.Module):
    def __init__(self, n_tasks):
        super().__init__()
        self.sigma = nn.Parameter(torch.ones(n_tasks))

    def forward(self, losses):
        sigma = F.softplus(self.sigma) + 1e-3
        return (losses / (2 * sigma ** 2) + torch.log(sigma)).sum()


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.reg = nn.Linear(16, 1)
        self.cls = nn.Linear(16, 3)

    def forward(self, x):
        h = self.trunk(x)
        return self.reg(h).squeeze(1), self.cls(h)


x = torch.randn(32, 6)
y_reg = torch.randn(32)
y_cls = torch.randint(0, 3, (32,))

model = TwoHeads()
weighting = UncertaintyWeighting(2)
opt = torch.optim.Adam(list(model.parameters()) + list(weighting.parameters()), lr=1e-2)

for step in range(5):
    reg, cls = model(x)
    losses = torch.stack([F.mse_loss(reg, y_reg), F.cross_entropy(cls, y_cls)])
    loss = weighting(losses)
    loss.backward()
    opt.step()
    opt.zero_grad()
