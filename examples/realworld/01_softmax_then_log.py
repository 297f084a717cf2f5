"""softmax_then_log: the bug.

Source: https://github.com/deeplearning4j/nd4j/pull/458
Cross-entropy computed as the log of a softmax output: a probability that underflows to 0 gives
log(0) = -inf (the PR switches to log-softmax to avoid the underflow).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(8, 10) * 4
target = torch.randint(0, 10, (8,))

probs = torch.softmax(logits, dim=1)
loss = -torch.log(probs).mean()
