"""logreg_manual_bce: the bug.

Logistic regression from scratch, the tutorial way: raw weight tensors, p = sigmoid(x @ w + b)
and the binary cross-entropy written out as -(y log p + (1 - y) log(1 - p)). The data are
linearly separable, so gradient descent keeps growing w; once |x @ w + b| passes about 17 the
float32 sigmoid rounds to exactly 1 (or, past about 103, to 0) and log(1 - p) or log(p) is -inf
(and 0 * -inf is NaN).
Fix: the loss on the logits, F.binary_cross_entropy_with_logits (log-sigmoid inside).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn.functional as F

torch.manual_seed(0)

x = torch.randn(64, 3)
y = (x @ torch.tensor([2.0, -1.0, 0.5]) > 0).float()

w = torch.zeros(3, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=0.5)

for step in range(5):
    p = torch.sigmoid(x @ w + b)
    loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
