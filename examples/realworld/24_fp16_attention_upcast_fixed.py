"""fp16_attention_upcast_fixed: the fix.

Source: https://github.com/huggingface/transformers/pull/17437
OPT in half precision: attention scores overflow float16 and the softmax produces NaN; the fix
upcasts to float32 before the softmax.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

q = (torch.randn(4, 16) * 8).half()
k = (torch.randn(4, 16) * 8).half()

scores = q.float() @ k.float().t()
attn = torch.softmax(scores, dim=-1)
