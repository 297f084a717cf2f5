"""layernorm_without_eps: the bug.

Source: https://github.com/vanvalenlab/deepcell-toolbox/pull/72
normalize divides by the standard deviation; a constant image has std 0 and the result is NaN;
the PR adds an epsilon (a hand-written layer norm without eps is the same bug).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

img = torch.randn(2, 32)

mu = img.mean(dim=1, keepdim=True)
var = ((img - mu) ** 2).mean(dim=1, keepdim=True)
out = (img - mu) / torch.sqrt(var)
