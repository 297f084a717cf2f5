"""heading_change_acos: the bug.

A trajectory model with a smoothness penalty on the predicted heading: the turn angle between
consecutive velocity vectors is acos(cosine_similarity(v_t, v_t+1)). Along a smooth input path,
once the weights are large enough to saturate the tanh layer, consecutive predictions are
identical, and their cosine similarity can round to just above 1: acos gives NaN.
Fix: clamp the cosine to [-1 + 1e-6, 1 - 1e-6] before acos.

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class VelocityNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)


path = torch.cumsum(0.05 * torch.randn(3, 20, 4), dim=1)
target_v = torch.randn(3, 20, 2)

model = VelocityNet()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(5):
    v = model(path)
    cos = F.cosine_similarity(v[:, 1:], v[:, :-1], dim=-1)
    turn = torch.acos(cos)
    loss = F.mse_loss(v, target_v) + 0.1 * turn.pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
