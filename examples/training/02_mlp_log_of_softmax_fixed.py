"""mlp_log_of_softmax_fixed: the fix.

An MLP classifier trained with nll_loss on torch.log(softmax(logits)), a pattern seen in many
tutorials. When the logits spread by more than about 100 (the weights grow as the net gets
confident) the softmax of the losing classes underflows to exactly 0 and log gives -inf; the
loss becomes inf or NaN as soon as a target class is one of them.
Fix: F.log_softmax(logits), which never forms the underflowing probability.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(32, 10)
y = torch.randint(0, 4, (32,))

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    logits = model(x)
    loss = F.nll_loss(F.log_softmax(logits, dim=1), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
