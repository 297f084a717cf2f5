"""vae_logvar_exp: the bug.

Source: https://github.com/vanderschaarlab/synthcity/issues/331
VAE: an unbounded log-variance from the encoder overflows when exponentiated in the
reparameterisation and the KL term (NaN losses); the fix clamps logvar to [-30, 20].

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

h = torch.randn(4, 8)
w = torch.randn(3, 8)
mu = torch.randn(4, 3)

logvar = F.linear(h, w) * 10
kl = -0.5 * (1 + logvar - mu.pow(2) - torch.exp(logvar)).sum(dim=1)
