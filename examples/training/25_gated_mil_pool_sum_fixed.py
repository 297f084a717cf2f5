"""gated_mil_pool_sum_fixed: the fix.

Multiple-instance pooling with sigmoid gates normalised by their sum, sum(g h) / sum(g). The
gate logits grow with the weights; when they are all below about -103 in a bag every float32
sigmoid is exactly 0 and the pooled feature is 0 / 0 = NaN.
Fix: an epsilon in the denominator.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GatedPool(nn.Module):
    def __init__(self, d_in=4, d=8):
        super().__init__()
        self.encoder = nn.Linear(d_in, d)
        self.gate = nn.Linear(d, 1)
        self.classifier = nn.Linear(d, 1)

    def forward(self, bags):
        h = F.relu(self.encoder(bags))
        g = torch.sigmoid(self.gate(h))
        pooled = (g * h).sum(dim=1) / (g.sum(dim=1) + 1e-6)
        return self.classifier(pooled).squeeze(1)


bags = torch.randn(12, 3, 4)
labels = (bags[:, :, 1].mean(dim=1) > 0).float()

model = GatedPool()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = F.binary_cross_entropy_with_logits(model(bags), labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
