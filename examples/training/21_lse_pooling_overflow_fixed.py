"""lse_pooling_overflow_fixed: the fix.

Multiple-instance learning with log-mean-exp (LSE) pooling over the instances of a bag, written
as log(mean(exp(r h))) / r. The instance features grow with the encoder's weights: past r h =
88.7 exp overflows to inf, and when every instance is very negative the mean underflows to 0 and
log gives -inf.
Fix: (logsumexp(r h) - log n) / r.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LSEPoolMIL(nn.Module):
    def __init__(self, d_in=4, d=8, r=5.0):
        super().__init__()
        self.encoder = nn.Linear(d_in, d)
        self.classifier = nn.Linear(d, 1)
        self.r = r

    def forward(self, bags):
        h = self.encoder(bags)
        pooled = (torch.logsumexp(self.r * h, dim=1) - math.log(h.shape[1])) / self.r
        return self.classifier(pooled).squeeze(1)


bags = torch.randn(8, 5, 4)
labels = (bags[:, :, 0].max(dim=1).values > 1.0).float()

model = LSEPoolMIL()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = F.binary_cross_entropy_with_logits(model(bags), labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
