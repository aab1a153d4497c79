"""SAC.optimize_model: the Q-networks' optimizers step before the policy loss, which
was built through those Q-networks, is backpropagated.

Source: https://github.com/mimoralea/gdrl/issues/13
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self, nS, nA):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(nS, 16), nn.ReLU(), nn.Linear(16, 2 * nA))
        self.logalpha = nn.Parameter(torch.zeros(1))
        self.target_entropy = -float(nA)
        self.alpha_optimizer = torch.optim.Adam([self.logalpha], lr=1e-3)

    def full_pass(self, state):
        mean, log_std = self.net(state).chunk(2, dim=-1)
        pi_s = torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp())
        pre_tanh = pi_s.rsample()
        action = torch.tanh(pre_tanh)
        logpi = (pi_s.log_prob(pre_tanh) - torch.log(1 - action.pow(2) + 1e-6)).sum(-1, keepdim=True)
        return action, logpi, torch.tanh(mean)


class QNet(nn.Module):
    def __init__(self, nS, nA):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(nS + nA, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, state, action):
        return self.net(torch.cat((state, action), dim=1))


class SAC:
    def __init__(self, nS=3, nA=2):
        self.policy_model = Policy(nS, nA)
        self.online_value_model_a, self.online_value_model_b = QNet(nS, nA), QNet(nS, nA)
        self.policy_optimizer = torch.optim.Adam(self.policy_model.net.parameters(), lr=1e-3)
        self.value_optimizer_a = torch.optim.Adam(self.online_value_model_a.parameters(), lr=1e-3)
        self.value_optimizer_b = torch.optim.Adam(self.online_value_model_b.parameters(), lr=1e-3)

    def optimize_model(self, states, actions, rewards):
        current_actions, logpi_s, _ = self.policy_model.full_pass(states)
        target_alpha = (logpi_s + self.policy_model.target_entropy).detach()
        alpha_loss = -(self.policy_model.logalpha * target_alpha).mean()
        self.policy_model.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.policy_model.alpha_optimizer.step()
        alpha = self.policy_model.logalpha.exp()

        current_q_sa_a = self.online_value_model_a(states, current_actions)
        current_q_sa_b = self.online_value_model_b(states, current_actions)
        current_q_sa = torch.min(current_q_sa_a, current_q_sa_b)
        policy_loss = (alpha * logpi_s - current_q_sa).mean()

        target_q_sa = rewards.detach()
        qa_loss = (self.online_value_model_a(states, actions) - target_q_sa).pow(2).mul(0.5).mean()
        qb_loss = (self.online_value_model_b(states, actions) - target_q_sa).pow(2).mul(0.5).mean()
        self.value_optimizer_a.zero_grad()
        qa_loss.backward()
        self.value_optimizer_a.step()  # culprit: GG202
        self.value_optimizer_b.zero_grad()
        qb_loss.backward()
        self.value_optimizer_b.step()  # culprit: GG202

        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        self.policy_optimizer.step()


torch.manual_seed(0)
agent = SAC()
for _ in range(2):
    agent.optimize_model(torch.randn(5, 3), torch.rand(5, 2) * 2 - 1, torch.randn(5, 1))
