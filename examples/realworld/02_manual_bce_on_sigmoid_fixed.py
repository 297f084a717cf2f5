"""manual_bce_on_sigmoid_fixed: the fix.

Source: https://github.com/pytorch/pytorch/issues/751
Binary cross-entropy written on sigmoid outputs (a GAN discriminator): sigmoid saturates to 0 or
1 and log(0) or log(1 - 1) is -inf; the issue asks for a loss on logits.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

logits = torch.randn(16) * 3
y = (torch.rand(16) > 0.5).float()

loss = -(y * F.logsigmoid(logits) + (1 - y) * F.logsigmoid(-logits)).mean()
