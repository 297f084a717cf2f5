"""fp16_mask_min_overflow_fixed: the fix.

Source: https://github.com/huggingface/transformers/pull/17306
Masking with torch.finfo(float16).min: a score below -16 plus the mask rounds to -inf, a fully
masked row is all -inf and its softmax NaN; XGLM/OPT fixes clamp with torch.max(.., finfo.min).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

scores = torch.randn(3, 5).half() * 8
mask = torch.full((3, 5), -65504.0).half()

w = torch.maximum(scores + mask, torch.full((3, 5), -65504.0).half())
attn = torch.softmax(w.float(), dim=-1)
