"""embedding_normalize_zero_fixed: the fix.

Metric learning: an embedding net ending in a ReLU, L2-normalised by hand as h / h.norm() before
a triplet loss. When every output unit of a sample is dead (after a large update, or as the
weights shrink) its embedding is the zero vector and the normalisation is 0 / 0 = NaN.
Fix: F.normalize(h, dim=1), which divides by max(norm, eps).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 8)

    def forward(self, x):
        h = F.relu(self.fc2(F.relu(self.fc1(x))))
        return F.normalize(h, dim=1)


anchor = torch.randn(16, 6)
positive = anchor + 0.1 * torch.randn(16, 6)
negative = torch.randn(16, 6)

net = EmbeddingNet()
opt = torch.optim.SGD(net.parameters(), lr=0.1)

for step in range(5):
    loss = F.triplet_margin_loss(net(anchor), net(positive), net(negative), margin=0.2)
    loss.backward()
    opt.step()
    opt.zero_grad()
