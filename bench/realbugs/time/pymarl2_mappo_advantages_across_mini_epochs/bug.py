"""pymarl2's PPO/MAPPO learner with mini_epochs > 1: the advantages are computed from the
critic once, outside the mini-epoch loop, and each mini-epoch's actor loss backpropagates
into that critic graph, which the first mini-epoch's backward freed.

Source: https://github.com/hijkzzz/pymarl2/issues/46
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch as th
import torch.nn as nn


class Args:
    mini_epochs, eps_clip, entropy_coef, gamma, n_actions = 2, 0.2, 0.01, 0.99, 3


class PPOLearner:
    def __init__(self, args):
        self.args = args
        self.agent = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, args.n_actions))
        self.critic = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
        self.agent_optimiser = th.optim.Adam(self.agent.parameters(), lr=5e-4)
        self.critic_optimiser = th.optim.Adam(self.critic.parameters(), lr=5e-4)

    def train(self, batch):
        obs, actions, rewards, mask = batch["obs"], batch["actions"], batch["reward"], batch["mask"]
        with th.no_grad():
            old_pi = th.softmax(self.agent(obs), dim=-1)
            old_log_pi_taken = th.log(th.gather(old_pi, dim=-1, index=actions).squeeze(-1) + 1e-10)

        advantages = self.train_critic_sequential(obs, rewards)

        for k in range(self.args.mini_epochs):
            pi = th.softmax(self.agent(obs), dim=-1)
            log_pi_taken = th.log(th.gather(pi, dim=-1, index=actions).squeeze(-1) + 1e-10)
            ratios = th.exp(log_pi_taken - old_log_pi_taken.detach())
            surr1 = ratios * advantages
            surr2 = th.clamp(ratios, 1 - self.args.eps_clip, 1 + self.args.eps_clip) * advantages
            entropy = -th.sum(pi * th.log(pi + 1e-10), dim=-1)
            pg_loss = -((th.min(surr1, surr2) + self.args.entropy_coef * entropy) * mask).sum() / mask.sum()

            self.agent_optimiser.zero_grad()
            pg_loss.backward()  # culprit: GG207
            self.agent_optimiser.step()

    def train_critic_sequential(self, obs, rewards):
        v = self.critic(obs).squeeze(-1)
        with th.no_grad():
            target_returns = rewards + self.args.gamma * v
        advantages = target_returns - v
        return advantages


th.manual_seed(0)
learner = PPOLearner(Args())
learner.train({"obs": th.randn(8, 5), "actions": th.randint(0, 3, (8, 1)),
               "reward": th.randn(8), "mask": th.ones(8)})
