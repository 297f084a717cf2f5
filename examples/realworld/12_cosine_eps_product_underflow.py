"""cosine_eps_product_underflow: the bug.

Source: https://github.com/tracel-ai/burn/issues/5584
Cosine similarity with each norm clamped to eps = float32 tiny: the product of the two clamped
norms underflows to 0 and two zero vectors give 0 / 0 = NaN (fixed by normalising each input by
its own clamped norm).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

a = torch.relu(torch.randn(3, 4))
b = torch.relu(torch.randn(3, 4))
eps = 1.1754943508222875e-38

den = a.norm(dim=1).clamp_min(eps) * b.norm(dim=1).clamp_min(eps)
cos = (a * b).sum(dim=1) / den
