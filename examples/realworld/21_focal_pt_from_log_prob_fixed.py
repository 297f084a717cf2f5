"""focal_pt_from_log_prob_fixed: the fix.

Source: https://github.com/HeyLynne/FocalLoss_for_multiclass/issues/3
Multi-class focal loss computes pt from the log-probability instead of the probability; its log
is then log of a negative number (NaN loss, confirmed by a commenter); fix: pt = exp(log_p).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(8, 4)

log_p = torch.log_softmax(logits, dim=1)
pt = torch.exp(log_p)
loss = (-(1 - pt).pow(2.0) * log_p).mean()
