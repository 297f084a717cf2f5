"""rating_curve_pow_fixed: the fix.

A physics-informed discharge model, Q = a * stage ** 1.5 (a weir / rating-curve law), with the
effective stage predicted by a small net plus an offset that keeps it positive at
initialisation. Nothing keeps it positive afterwards: once the net's output weights grow, the
stage goes negative for some samples and a negative base to the power 1.5 is NaN.
Fix: clamp the stage at zero before the fractional power.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class RatingCurve(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        self.a = nn.Parameter(torch.ones(1))

    def forward(self, x):
        stage = self.net(x).squeeze(1) + 1.0
        return self.a * stage.clamp(min=0.0) ** 1.5


x = torch.randn(30, 3)
discharge = 5 * torch.rand(30)

model = RatingCurve()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = F.mse_loss(model(x), discharge)
    loss.backward()
    opt.step()
    opt.zero_grad()
