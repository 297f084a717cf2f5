"""manual_sigmoid_exp_fixed: the fix.

A two-layer net written from scratch (raw tensors, the numpy-port style) with its own sigmoid, 1
/ (1 + exp(-z)). For z below about -88.7 exp(-z) overflows to inf; the forward value still
rounds to 0, but the inf is there, and backward through it multiplies 0 by inf: NaN gradients
once the weights are large.
Fix: torch.sigmoid.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch

torch.manual_seed(0)


def sigmoid(z):
    return torch.sigmoid(z)


x = torch.randint(0, 2, (32, 2)).float()
y = (x[:, :1] != x[:, 1:]).float()

w1 = (0.5 * torch.randn(2, 8)).requires_grad_()
b1 = torch.zeros(8, requires_grad=True)
w2 = (0.5 * torch.randn(8, 1)).requires_grad_()
b2 = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w1, b1, w2, b2], lr=2.0)

for step in range(5):
    h = sigmoid(x @ w1 + b1)
    out = sigmoid(h @ w2 + b2)
    loss = ((out - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
