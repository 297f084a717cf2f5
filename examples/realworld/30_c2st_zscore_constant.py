"""c2st_zscore_constant: the bug.

Source: https://github.com/sbi-dev/sbi/issues/1204
c2st z-scores both sample sets by the first set's std: a constant feature gives a division by
zero and NaN inputs to the classifier.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

X = torch.randn(8, 2)
Y = torch.randn(8, 2)

mean, std = X.mean(dim=0), X.std(dim=0)
Xz = (X - mean) / std
Yz = (Y - mean) / std
