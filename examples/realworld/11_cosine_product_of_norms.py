"""cosine_product_of_norms: the bug.

Source: https://github.com/HKUDS/LightRAG/pull/3421
cosine_similarity = dot / (norm(a) * norm(b)): a zero vector makes the denominator 0 and the
result NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

a = torch.relu(torch.randn(3, 5))
b = torch.relu(torch.randn(3, 5))

cos = (a * b).sum(dim=1) / (a.norm(dim=1) * b.norm(dim=1))
