"""cldice_harmonic_mean: the bug.

Source: https://github.com/Project-MONAI/MONAI/pull/8739
clDice harmonic mean 2 * tprec * tsens / (tprec + tsens): both zero (no skeleton overlap, smooth
= 0) gives 0 / 0 = NaN; the PR adds 1e-7 to the denominator.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

skel_pred = torch.relu(torch.randn(2, 10))
skel_true = torch.relu(torch.randn(2, 10))
mask_pred = torch.rand(2, 10)
mask_true = torch.rand(2, 10)

tprec = (skel_pred * mask_true).sum(dim=1) / skel_pred.sum(dim=1)
tsens = (skel_true * mask_pred).sum(dim=1) / skel_true.sum(dim=1)
cl = 1.0 - 2.0 * (tprec * tsens) / (tprec + tsens)
