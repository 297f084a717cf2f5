"""acos_of_cosine_fixed: the fix.

Source: https://github.com/QData/TextAttack/pull/804
Angular similarity acos(cos_sim) of two sentence embeddings: rounding makes cos_sim of equal
embeddings slightly above 1 and acos returns NaN (the PR clamps to [-1, 1]).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

a = torch.randn(4, 32)
b = a.clone()

cos = (a * b).sum(dim=1) / (a.norm(dim=1) * b.norm(dim=1))
angle = torch.acos(cos.clamp(-1.0, 1.0))
