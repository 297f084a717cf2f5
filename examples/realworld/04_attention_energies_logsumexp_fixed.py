"""attention_energies_logsumexp_fixed: the fix.

Source: https://github.com/mila-iqia/blocks/pull/727
Attention energies accumulated until exp overflows, NaN propagating through a translation model;
the fix stabilises the normaliser as softmax does (log of a sum of exps vs logsumexp).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

energies = torch.randn(6, 12) * 10

norm = torch.logsumexp(energies, dim=-1)
logp = energies - norm.unsqueeze(-1)
