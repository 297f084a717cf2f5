"""evidential_exp_evidence_fixed: the fix.

Evidential deep learning for classification with exp as the evidence function: alpha =
exp(logits) + 1, expected probability alpha / sum(alpha). When a logit passes 88.7 the evidence
is inf, the Dirichlet strength is inf and alpha / S is inf / inf = NaN.
Fix: clamp the logits to [-10, 10] before exp, a choice used in evidential-learning code.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(30, 6)
y = torch.randint(0, 3, (30,))
y_onehot = F.one_hot(y, 3).float()

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    logits = model(x)
    evidence = torch.exp(logits.clamp(-10.0, 10.0))
    alpha = evidence + 1
    strength = alpha.sum(dim=1, keepdim=True)
    p = alpha / strength
    loss = ((y_onehot - p) ** 2 + p * (1 - p) / (strength + 1)).sum(dim=1).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
