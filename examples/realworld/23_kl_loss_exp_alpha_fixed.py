"""kl_loss_exp_alpha_fixed: the fix.

Source: https://github.com/ethanhe42/KL-Loss/issues/4
KL-Loss for box regression: exp(-alpha) * err^2 / 2 + alpha / 2 with a predicted alpha that is
extremely small or large overflows; users clip alpha to (-50, 50).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

alpha = torch.randn(16) * 20
err = torch.randn(16)

a = alpha.clamp(-50.0, 50.0)
loss = (torch.exp(-a) * err.pow(2) / 2 + a / 2).mean()
