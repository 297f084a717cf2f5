"""survival_log_one_minus_exp: the bug.

A survival model's likelihood for an event within the interval, log(1 - exp(-H)), with the
cumulative hazard H = softplus(linear). When the weights push H below about 3e-8 (softplus of a
large negative value is tiny or exactly 0), exp(-H) rounds to 1 and the log is of 0: -inf, and 0
* -inf = NaN for censored rows.
Fix: log(-expm1(-H)) with a floor, which keeps the precision for small H.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(40, 5)
event = (torch.rand(40) < 0.6).float()

model = nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(5):
    hazard = F.softplus(model(x).squeeze(1))
    loglik = event * torch.log(1 - torch.exp(-hazard)) - (1 - event) * hazard
    loss = -loglik.mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
