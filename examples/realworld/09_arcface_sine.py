"""arcface_sine: the bug.

Source: https://github.com/ronghuaiyang/arcface-pytorch/issues/68
ArcFace margin: sine = sqrt(1 - cosine^2) with cosine from normalised features; cosine reaching
1 (or a hair above) makes the loss NaN; the issue clamps cosine to [-1+eps, 1-eps].

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(4, 8)
w = torch.randn(6, 8)

cosine = F.linear(F.normalize(x), F.normalize(w))
sine = torch.sqrt(1.0 - cosine.pow(2))
