"""zero_embedding_normalize_fixed: the fix.

Source: https://github.com/huggingface/sentence-transformers/issues/625
Cosine similarity of sentence embeddings: an all-zero embedding (unknown words) divided by its
norm is 0 / 0 = NaN; the fix uses F.normalize, which has an eps.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(4, 6)
w = torch.randn(5, 6)

emb = torch.relu(F.linear(x, w))
unit = F.normalize(emb, dim=1)
sim = unit @ unit.t()
