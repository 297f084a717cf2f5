"""linear_attention_relu_sum_fixed: the fix.

Linear attention with a ReLU feature map: out = phi(q) (phi(k)^T v) / (phi(q) . sum phi(k)).
When every feature of a query (or every key) is cut by the ReLU, which happens as the
projections grow or shrink during training, the normaliser is exactly 0 and the output is 0 / 0
= NaN.
Fix: add a small epsilon to the normaliser, as linear-attention implementations do.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ReLULinearAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = F.relu(self.q(x)), F.relu(self.k(x)), self.v(x)
        kv = k.transpose(-2, -1) @ v
        z = q @ k.sum(dim=-2).unsqueeze(-1)
        return (q @ kv) / (z + 1e-6)


x = torch.randn(3, 10, 8)
target = torch.randn(3, 10, 8)
model = ReLULinearAttention(8)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(5):
    loss = F.mse_loss(model(x), target)
    loss.backward()
    opt.step()
    opt.zero_grad()
