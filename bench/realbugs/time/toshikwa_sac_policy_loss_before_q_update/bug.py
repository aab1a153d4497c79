"""soft-actor-critic.pytorch's SacAgent.learn: policy_loss is computed through the twin
critic, then update_params steps Q1 and Q2 before the policy loss is backpropagated.
Two culprit lines: the call in learn() that steps too early, and the step in the helper,
where the finding lands (its message names the calls that step and backpropagate).

Source: https://github.com/toshikwa/soft-actor-critic.pytorch/issues/1
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn


def update_params(optim, network, loss, grad_clip=None, retain_graph=False):
    optim.zero_grad()
    loss.backward(retain_graph=retain_graph)
    if grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(network.parameters(), grad_clip)
    optim.step()  # culprit: GG202


class QNetwork(nn.Module):
    def __init__(self, num_inputs):
        super().__init__()
        self.Q = nn.Sequential(nn.Linear(num_inputs, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.Q(x)


class TwinnedQNetwork(nn.Module):
    def __init__(self, num_inputs):
        super().__init__()
        self.Q1, self.Q2 = QNetwork(num_inputs), QNetwork(num_inputs)

    def forward(self, states, actions):
        x = torch.cat([states, actions], dim=1)
        return self.Q1(x), self.Q2(x)


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.policy = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))

    def sample(self, states):
        means, log_stds = self.policy(states).chunk(2, dim=-1)
        normals = torch.distributions.Normal(means, log_stds.clamp(-20, 2).exp())
        xs = normals.rsample()
        actions = torch.tanh(xs)
        log_probs = normals.log_prob(xs) - torch.log(1 - actions.pow(2) + 1e-6)
        return actions, -log_probs.sum(dim=1, keepdim=True), torch.tanh(means)


class SacAgent:
    def __init__(self):
        self.policy, self.critic = GaussianPolicy(4, 2), TwinnedQNetwork(6)
        self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=3e-4)
        self.q1_optim = torch.optim.Adam(self.critic.Q1.parameters(), lr=3e-4)
        self.q2_optim = torch.optim.Adam(self.critic.Q2.parameters(), lr=3e-4)
        self.alpha, self.gamma, self.grad_clip = 0.2, 0.99, None

    def calc_critic_loss(self, batch, weights):
        states, actions, rewards, next_states, dones = batch
        curr_q1, curr_q2 = self.critic(states, actions)
        with torch.no_grad():
            next_actions, next_entropies, _ = self.policy.sample(next_states)
            next_q1, next_q2 = self.critic(next_states, next_actions)
            target_q = rewards + (1 - dones) * self.gamma * (torch.min(next_q1, next_q2) + self.alpha * next_entropies)
        q1_loss = torch.mean((curr_q1 - target_q).pow(2) * weights)
        q2_loss = torch.mean((curr_q2 - target_q).pow(2) * weights)
        return q1_loss, q2_loss

    def calc_policy_loss(self, batch, weights):
        states = batch[0]
        sampled_action, entropy, _ = self.policy.sample(states)
        q1, q2 = self.critic(states, sampled_action)
        q = torch.min(q1, q2)
        policy_loss = torch.mean((- q - self.alpha * entropy) * weights)
        return policy_loss, entropy

    def learn(self, batch):
        weights = 1.
        q1_loss, q2_loss = self.calc_critic_loss(batch, weights)
        policy_loss, entropies = self.calc_policy_loss(batch, weights)

        update_params(self.q1_optim, self.critic.Q1, q1_loss, self.grad_clip)  # culprit: GG202
        update_params(self.q2_optim, self.critic.Q2, q2_loss, self.grad_clip)
        update_params(self.policy_optim, self.policy, policy_loss, self.grad_clip)


torch.manual_seed(0)
agent = SacAgent()
agent.learn((torch.randn(8, 4), torch.rand(8, 2), torch.randn(8, 1), torch.randn(8, 4), torch.zeros(8, 1)))
