"""sac_squash_stable_form_fixed: the fix.

Source: https://github.com/rlworkgroup/garage/issues/1174
Tanh-squashed Gaussian log-probability: log(1 - tanh(u)^2) underflows to log(0) = -inf once tanh
saturates; the stable form is 2 * (log 2 - u - softplus(-2u)).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

u = torch.randn(8, 3) * 2

corr = (2 * (0.6931471805599453 - u - F.softplus(-2 * u))).sum(dim=1)
