"""mha_fp16_product: the bug.

Source: https://github.com/pytorch/pytorch/issues/60939
multi_head_attention_forward in fp16: the product of q and k can be inf and the following
softmax NaN.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

q = torch.randn(2, 4, 8).half()
k = torch.randn(2, 4, 8).half()

scores = torch.matmul(q * 16, k.transpose(1, 2))
attn = torch.softmax(scores.float(), dim=-1)
