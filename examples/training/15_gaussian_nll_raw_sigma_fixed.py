"""gaussian_nll_raw_sigma_fixed: the fix.

Heteroscedastic regression: the net predicts a mean and a standard deviation, and the Gaussian
negative log-likelihood log(sigma) + (y - mu)^2 / (2 sigma^2) is written out by hand. sigma is a
raw linear output shifted to start near 1; nothing keeps it positive, so once the head's weights
move it reaches 0 (log gives -inf, the quotient inf) or goes negative (log gives NaN).
Fix: a positive parametrisation, sigma = softplus(1 + raw) + 1e-3.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MeanStdNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 16), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        out = self.head(self.body(x))
        mu = out[:, 0]
        sigma = F.softplus(1.0 + out[:, 1]) + 1e-3
        return mu, sigma


x = torch.randn(40, 3)
y = x[:, 0] + 0.5 * torch.randn(40) * x[:, 1].abs()

model = MeanStdNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    mu, sigma = model(x)
    loss = (torch.log(sigma) + 0.5 * ((y - mu) / sigma) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
