"""dice_no_smoothing: the bug.

Source: https://github.com/nasa/delta/pull/115
Dice coefficient 2|X n Y| / (|X| + |Y|) with no epsilon: an empty prediction and an empty mask
divide 0 by 0 (the PR adds an epsilon to the denominator).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

pred = torch.relu(torch.randn(2, 16))
mask = (torch.rand(2, 16) > 0.7).float()

inter = (pred * mask).sum(dim=1)
dice = 2 * inter / (pred.sum(dim=1) + mask.sum(dim=1))
