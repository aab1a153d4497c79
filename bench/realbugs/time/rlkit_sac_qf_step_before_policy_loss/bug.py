"""rlkit's SACTrainer: the Q-functions' optimizers step before policy_loss, built earlier
through qf1 and qf2 on the policy's actions, is backpropagated.

Source: https://github.com/rail-berkeley/rlkit/pull/109
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn


class ConcatMlp(nn.Module):
    def __init__(self, in_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], dim=1))


class TanhGaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))

    def forward(self, obs, reparameterize=True, return_log_prob=True):
        mean, log_std = self.net(obs).chunk(2, dim=1)
        normal = torch.distributions.Normal(mean, log_std.clamp(-20, 2).exp())
        pre_tanh = normal.rsample()
        action = torch.tanh(pre_tanh)
        log_prob = (normal.log_prob(pre_tanh) - torch.log(1 - action.pow(2) + 1e-6)).sum(1, keepdim=True)
        return action, mean, log_std, log_prob


class SACTrainer:
    def __init__(self, policy, qf1, qf2, target_qf1, target_qf2, discount=0.99):
        self.policy, self.qf1, self.qf2 = policy, qf1, qf2
        self.target_qf1, self.target_qf2 = target_qf1, target_qf2
        self.discount, self.reward_scale = discount, 1.0
        self.qf_criterion = nn.MSELoss()
        self.policy_optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)
        self.qf1_optimizer = torch.optim.Adam(qf1.parameters(), lr=3e-4)
        self.qf2_optimizer = torch.optim.Adam(qf2.parameters(), lr=3e-4)

    def train_from_torch(self, batch):
        rewards, terminals = batch['rewards'], batch['terminals']
        obs, actions, next_obs = batch['observations'], batch['actions'], batch['next_observations']

        new_obs_actions, policy_mean, policy_log_std, log_pi = self.policy(obs)
        alpha = 1
        q_new_actions = torch.min(self.qf1(obs, new_obs_actions), self.qf2(obs, new_obs_actions))
        policy_loss = (alpha * log_pi - q_new_actions).mean()

        q1_pred = self.qf1(obs, actions)
        q2_pred = self.qf2(obs, actions)
        new_next_actions, _, _, new_log_pi = self.policy(next_obs)
        target_q_values = torch.min(self.target_qf1(next_obs, new_next_actions),
                                    self.target_qf2(next_obs, new_next_actions)) - alpha * new_log_pi
        q_target = self.reward_scale * rewards + (1. - terminals) * self.discount * target_q_values
        qf1_loss = self.qf_criterion(q1_pred, q_target.detach())
        qf2_loss = self.qf_criterion(q2_pred, q_target.detach())

        self.qf1_optimizer.zero_grad()
        qf1_loss.backward()
        self.qf1_optimizer.step()  # culprit: GG202

        self.qf2_optimizer.zero_grad()
        qf2_loss.backward()
        self.qf2_optimizer.step()

        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        self.policy_optimizer.step()


torch.manual_seed(0)
trainer = SACTrainer(TanhGaussianPolicy(4, 2), ConcatMlp(6), ConcatMlp(6), ConcatMlp(6), ConcatMlp(6))
for _ in range(2):
    trainer.train_from_torch({'observations': torch.randn(8, 4), 'actions': torch.rand(8, 2),
                              'next_observations': torch.randn(8, 4), 'rewards': torch.randn(8, 1),
                              'terminals': torch.zeros(8, 1)})
