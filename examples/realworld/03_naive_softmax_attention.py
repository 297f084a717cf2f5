"""naive_softmax_attention: the bug.

Source: https://github.com/pytorch/executorch/pull/18407
Attention weights computed as exp(x) / sum(exp(x)): scores above ~88.7 overflow float32 to inf
and inf / inf is NaN (the PR subtracts the maximum first).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

q = torch.randn(4, 16)
k = torch.randn(4, 16)

scores = q @ k.t()
e = torch.exp(scores)
attn = e / e.sum(dim=-1, keepdim=True)
