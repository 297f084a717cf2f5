"""policy_entropy_bonus: the bug.

A policy-gradient loss with an entropy bonus written as -sum(p log p) on the softmax
probabilities. As the policy becomes confident its logits spread; past a gap of about 100 the
unlikely actions get a probability of exactly 0, log gives -inf and 0 * -inf is NaN.
Fix: use the log-softmax already computed for the policy-gradient term: -sum(p * log_softmax).

A minimal re-creation written for sfz's evaluation set (not code from the source).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

obs = torch.randn(16, 4)
actions = torch.randint(0, 3, (16,))
returns = torch.randn(16)

policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 3))
opt = torch.optim.Adam(policy.parameters(), lr=3e-3)

for step in range(5):
    logits = policy(obs)
    probs = F.softmax(logits, dim=-1)
    log_probs = F.log_softmax(logits, dim=-1)
    pg_loss = -(log_probs.gather(1, actions[:, None]).squeeze(1) * returns).mean()
    entropy = -(probs * torch.log(probs)).sum(dim=-1).mean()
    loss = pg_loss - 0.01 * entropy
    loss.backward()
    opt.step()
    opt.zero_grad()
