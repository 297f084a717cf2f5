"""log_of_relu_rate_sum_fixed: the fix.

A count model whose total intensity is the sum of several non-negative source rates (ReLU of a
linear layer, biased to start positive), with Poisson loss total - y log(total). When training
pushes all the source rates of a sample below zero the ReLU sum is exactly 0 and log gives -inf
(0 * -inf = NaN for a zero count).
Fix: clamp the total at a small positive floor inside the log.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SourceRates(nn.Module):
    def __init__(self, n_sources=4):
        super().__init__()
        self.lin = nn.Linear(6, n_sources)
        nn.init.constant_(self.lin.bias, 1.0)

    def forward(self, x):
        return F.relu(self.lin(x))


x = torch.randn(48, 6)
counts = torch.randint(0, 6, (48,)).float()

model = SourceRates()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for step in range(5):
    total = model(x).sum(dim=1)
    loss = (total - counts * torch.log(total.clamp(min=1e-6))).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
