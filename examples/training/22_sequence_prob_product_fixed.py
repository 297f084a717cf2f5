"""sequence_prob_product_fixed: the fix.

A toy language model that scores a sequence as log(prod_t p(token_t)), multiplying the per-token
probabilities first. The product of many probabilities underflows float32: once the model is
confident and wrong on a few tokens (the logits spread as the weights grow) the product is
exactly 0 and log gives -inf.
Fix: sum the per-token log-probabilities from log_softmax.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyLM(nn.Module):
    def __init__(self, vocab=10, d=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.out(torch.tanh(self.emb(tokens)))


tokens = torch.randint(0, 10, (4, 12))

model = TinyLM()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    logits = model(tokens[:, :-1])
    log_probs = F.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    seq_logp = log_probs.sum(dim=1)
    loss = -seq_logp.mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
