"""attention_exp_no_max_fixed: the fix.

A self-attention layer whose attention weights are written as exp(scores) / exp(scores).sum()
without subtracting the row maximum first. Scores are products of two learned projections, so
they grow with the square of the weights; once a score passes about 88.7 exp overflows float32
to inf and inf / inf is NaN.
Fix: torch.softmax(scores, dim=-1), which subtracts the maximum.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SelfAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.scale = d ** -0.5

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(-2, -1) * self.scale
        weights = torch.softmax(scores, dim=-1)
        return weights @ self.v(x)


x = torch.randn(2, 6, 8)
target = torch.randn(2, 6, 8)
model = SelfAttention(8)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(5):
    loss = F.mse_loss(model(x), target)
    loss.backward()
    opt.step()
    opt.zero_grad()
