"""layernorm_dead_relu_fixed: the fix.

A hand-written LayerNorm, (h - mean) / sqrt(var), with no epsilon, placed after a ReLU. When
training drives a sample's pre-activations all below zero (dead units, or weights that decay
towards zero) the normalised row is constant, its variance is exactly 0 and the division is 0 /
0 = NaN.
Fix: sqrt(var + 1e-5), as nn.LayerNorm does.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LayerNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d))
        self.beta = nn.Parameter(torch.zeros(d))

    def forward(self, h):
        mean = h.mean(dim=-1, keepdim=True)
        var = h.var(dim=-1, keepdim=True, unbiased=False)
        return self.gamma * (h - mean) / torch.sqrt(var + 1e-5) + self.beta


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = LayerNorm(16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(self.norm(F.relu(self.fc1(x))))


x = torch.randn(32, 8)
y = torch.randn(32, 1)
model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for step in range(5):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
