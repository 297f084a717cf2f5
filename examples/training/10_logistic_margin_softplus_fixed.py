"""logistic_margin_softplus_fixed: the fix.

A linear classifier with labels in {-1, +1} and the logistic loss written as log(1 + exp(-y
f(x))), a softplus by hand. When the weights grow and a sample is misclassified with margin
below about -88.7, exp overflows to inf and the loss is inf.
Fix: F.softplus(-y f(x)), which switches to the linear form for large arguments.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)


def logistic_loss(scores, labels):
    return F.softplus(-labels * scores).mean()


x = 4 * torch.randn(60, 4)
labels = torch.where(x[:, 0] + 4 * torch.randn(60) > 0, 1.0, -1.0)

w = (0.1 * torch.randn(4)).requires_grad_()
b = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=1.0)

for step in range(5):
    loss = logistic_loss(x @ w + b, labels) + 1e-4 * w.pow(2).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
