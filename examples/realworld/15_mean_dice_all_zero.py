"""mean_dice_all_zero: the bug.

Source: https://github.com/Project-MONAI/MONAI/issues/120
MeanDice on a channel whose label and prediction are all zero: the denominator y_o + y_pred_o is
0 and the metric is NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

y_pred = torch.relu(torch.randn(3, 4, 8))
y = torch.relu(torch.randn(3, 4, 8))

inter = (y_pred * y).sum(dim=2)
denom = y.sum(dim=2) + y_pred.sum(dim=2)
dice = 2.0 * inter / denom
