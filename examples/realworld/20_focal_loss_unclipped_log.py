"""focal_loss_unclipped_log: the bug.

Source: https://github.com/fudannlp16/focal-loss/issues/4
Focal loss takes log of predicted probabilities; the loss becomes NaN sometimes because of
log(0); the suggested fix clips y_pred to [1e-8, 1].

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(8, 4) * 6

y_pred = torch.softmax(logits, dim=1)
loss = -((1 - y_pred).pow(2.0) * torch.log(y_pred)).sum(dim=1).mean()
