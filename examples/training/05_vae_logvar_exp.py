"""vae_logvar_exp: the bug.

A VAE whose encoder predicts an unbounded log-variance, used as exp(0.5 * logvar) in the
reparameterisation and exp(logvar) in the KL term. When the log-variance head's weights grow,
logvar passes 88.7 and exp overflows to inf: the sample z is inf, the KL is inf and the
reconstruction NaN.
Fix: clamp the log-variance to [-30, 20] before it is used, as several well-known VAE code bases
do.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class VAE(nn.Module):
    def __init__(self, d_in=12, d_hidden=16, d_z=2):
        super().__init__()
        self.enc = nn.Linear(d_in, d_hidden)
        self.mu = nn.Linear(d_hidden, d_z)
        self.logvar = nn.Linear(d_hidden, d_z)
        self.dec = nn.Linear(d_z, d_in)

    def forward(self, x):
        h = torch.tanh(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.dec(z), mu, logvar


x = torch.rand(20, 12)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(5):
    recon, mu, logvar = model(x)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    rec = F.mse_loss(recon, x, reduction="sum")
    loss = rec + kl
    loss.backward()
    opt.step()
    opt.zero_grad()
