"""gem_pooling_overflow: the bug.

Generalised-mean (GeM) pooling, mean(x.clamp(min=eps) ** p) ** (1 / p), as commonly written in
image-retrieval code, with a trainable exponent p that starts at 3. x ** p overflows float32 to
inf once p log(x) passes 88.7, and both grow in training: the features with the projection's
weights, and p itself (at p = 30 a feature of 20 is enough).
Fix: compute the mean in log space, exp((logsumexp(p log x) - log n) / p), which is never larger
than the largest feature.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GeM(nn.Module):
    def __init__(self, p=3.0, eps=1e-6):
        super().__init__()
        self.p = nn.Parameter(torch.tensor(p))
        self.eps = eps

    def forward(self, x):  # (batch, items, features) -> (batch, features)
        p = self.p.clamp(min=1.0)
        return x.clamp(min=self.eps).pow(p).mean(dim=1).pow(1.0 / p)


class Retrieval(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)
        self.pool = GeM()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.pool(F.relu(self.proj(x))))


x = torch.rand(10, 7, 6)
y = torch.randint(0, 4, (10,))

model = Retrieval()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
