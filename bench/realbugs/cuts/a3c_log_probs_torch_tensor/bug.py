"""A3C worker: log-probabilities gathered with torch.tensor([...]), the actor's mean head never learns

Source: https://github.com/Quantum-Cheese/DeepReinforcementLearning_Pytorch/issues/1
Shape: cuts
Symptom: the actor's mean head never gets a gradient
"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal

torch.manual_seed(0)


class ActorContinous(nn.Module):
    def __init__(self, state_size, action_size):
        super().__init__()
        self.fc1 = nn.Linear(state_size, 16)
        self.mu = nn.Linear(16, action_size)
        self.sigma = nn.Linear(16, action_size)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return torch.tanh(self.mu(h)), F.softplus(self.sigma(h)) + 1e-3

    def act(self, state):
        mu, sigma = self.forward(state)
        dist = Normal(mu, sigma)
        action = dist.sample()
        return action, dist.log_prob(action).sum()


class ValueNetwork(nn.Module):
    def __init__(self, state_size, out):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(state_size, 16), nn.ReLU(), nn.Linear(16, out))

    def forward(self, x):
        return self.fc(x)


class Worker:
    def __init__(self, state_size, action_size, gamma=0.99):
        self.local_policyNet = ActorContinous(state_size, action_size)
        self.local_valueNet = ValueNetwork(state_size, 1)
        self.gamma = gamma
        self.memory = []

    def calculate_loss(self):
        states = torch.cat([t[0] for t in self.memory])
        log_probs = torch.tensor([t[1] for t in self.memory], dtype=torch.float)  # culprit: -
        rewards = [t[2] for t in self.memory]
        fur_Rewards = []
        for i in range(len(rewards)):
            discount = [self.gamma ** k for k in range(len(rewards) - i)]
            fur_Rewards.append(sum(d * f for d, f in zip(discount, rewards[i:])))
        fur_Rewards = torch.tensor(fur_Rewards, dtype=torch.float).view(-1, 1)
        V = self.local_valueNet(states)
        value_loss = F.mse_loss(fur_Rewards, V)
        (mu, sigma) = self.local_policyNet(states)
        dist = Normal(mu, sigma)
        entropy = 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(dist.scale)
        advantage = (fur_Rewards - V).detach()
        policy_loss = -advantage * log_probs.view(-1, 1)
        policy_loss = (policy_loss - 0.005 * entropy).mean()
        return value_loss, policy_loss


worker = Worker(state_size=4, action_size=1)
for step in range(5):  # one short episode of fake transitions
    state = torch.randn(1, 4)
    action, log_prob = worker.local_policyNet.act(state)
    worker.memory.append([state, log_prob, float(torch.randn(()))])

value_loss, policy_loss = worker.calculate_loss()
value_loss.backward()
policy_loss.backward()
assert worker.local_policyNet.mu.weight.grad is not None, "the actor's mean head never gets a gradient"
