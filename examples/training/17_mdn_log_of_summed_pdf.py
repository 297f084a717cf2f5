"""mdn_log_of_summed_pdf: the bug.

A mixture density network whose loss is -log(sum_k pi_k N(y; mu_k, sigma_k)), with the Gaussian
densities computed first, as in many MDN tutorials. When the means move away from a target (or
the predicted sigmas shrink) every density underflows to 0, the sum is 0 and log gives -inf.
Fix: work in log space: logsumexp(log_softmax(pi logits) + log N), with the log-density written
out.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MDN(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.hidden = nn.Linear(1, 16)
        self.pi = nn.Linear(16, k)
        self.mu = nn.Linear(16, k)
        self.sigma = nn.Linear(16, k)

    def forward(self, x):
        h = torch.tanh(self.hidden(x))
        return self.pi(h), self.mu(h), F.softplus(self.sigma(h)) + 1e-3


def mdn_loss(pi_logits, mu, sigma, y):
    pi = F.softmax(pi_logits, dim=1)
    pdf = torch.exp(-0.5 * ((y - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))
    return -torch.log((pi * pdf).sum(dim=1)).mean()


x = torch.rand(64, 1) * 2 - 1
y = torch.sin(3 * x) + 0.1 * torch.randn(64, 1)
y[::16] += 4.0

model = MDN()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    loss = mdn_loss(*model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
