"""binary_focal_unmasked: the bug.

Source: https://github.com/gnn-tracking/gnn_tracking/issues/138
Binary focal loss on sigmoid probabilities sometimes NaN: p of exactly 0 or 1 reaches log(0);
solved by handling 0s and 1s.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(32) * 4
y = (torch.rand(32) > 0.5).float()

p = torch.sigmoid(logits)
loss = -(y * (1 - p).pow(2.0) * torch.log(p) + (1 - y) * p.pow(2.0) * torch.log(1 - p)).mean()
