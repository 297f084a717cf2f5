"""entropy_p_log_p_fixed: the fix.

Source: https://github.com/RasmussenLab/vamb/issues/12
Entropy -sum(p * log p) over predicted probabilities: a probability of exactly 0 makes 0 *
log(0) = 0 * -inf = NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(5, 20) * 5

p = torch.softmax(logits, dim=-1)
h = -(p * torch.log_softmax(logits, dim=-1)).sum(dim=-1)
