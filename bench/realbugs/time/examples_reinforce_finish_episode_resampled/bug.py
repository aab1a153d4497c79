"""pytorch/examples' reinforce.py, with finish_episode() called more than once to train on
random samples of the stored experience: the log-probs kept on the policy carry graphs the
first call's backward already freed.

Source: https://github.com/pytorch/examples/issues/151
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

gamma, eps = 0.99, np.finfo(np.float32).eps.item()


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.affine2(x), dim=1)


policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode(batch_size=4):
    R, returns = 0, []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    samples = random.sample(list(zip(policy.saved_log_probs, returns)), batch_size)
    policy_loss = [-log_prob * R for log_prob, R in samples]
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()  # culprit: GG207
    optimizer.step()


random.seed(0)
torch.manual_seed(0)
rng = np.random.default_rng(0)
for i_episode in range(1):
    state = rng.standard_normal(4)
    for t in range(8):
        action = select_action(state)
        state, reward = rng.standard_normal(4), float(action)
        policy.rewards.append(reward)
    for _ in range(2):
        finish_episode()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
