"""MADDPG.train as the maintainer suggests: the critic's update is moved after the actor's,
so actor_loss is backpropagated while the critic still has the weights it saved.
"""
import torch
import torch.nn as nn


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, act_dim), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class Critic(nn.Module):
    def __init__(self, obs_dim, act_dim, n_agents):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_agents * (obs_dim + act_dim), 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, state, action):
        return self.net(torch.cat(state + action, dim=1))


class MADDPG:
    def __init__(self, agent_id, n_agents=2, obs_dim=4, act_dim=2):
        self.agent_id, self.gamma = agent_id, 0.95
        self.actor_network = Actor(obs_dim, act_dim)
        self.critic_network = Critic(obs_dim, act_dim, n_agents)
        self.actor_target_network = Actor(obs_dim, act_dim)
        self.critic_target_network = Critic(obs_dim, act_dim, n_agents)
        self.actor_optim = torch.optim.Adam(self.actor_network.parameters(), lr=1e-3)
        self.critic_optim = torch.optim.Adam(self.critic_network.parameters(), lr=1e-3)

    def train(self, transitions, other_agents):
        r = transitions['r_%d' % self.agent_id]
        o = [transitions['o_%d' % i] for i in range(2)]
        u = [transitions['u_%d' % i] for i in range(2)]
        o_next = [transitions['o_next_%d' % i] for i in range(2)]

        u_next = []
        with torch.no_grad():
            index = 0
            for agent_id in range(2):
                if agent_id == self.agent_id:
                    u_next.append(self.actor_target_network(o_next[agent_id]))
                else:
                    u_next.append(other_agents[index].policy.actor_target_network(o_next[agent_id]))
                    index += 1
            q_next = self.critic_target_network(o_next, u_next).detach()
            target_q = (r.unsqueeze(1) + self.gamma * q_next).detach()

        q_value = self.critic_network(o, u)
        critic_loss = (target_q - q_value).pow(2).mean()

        u[self.agent_id] = self.actor_network(o[self.agent_id])
        actor_loss = - self.critic_network(o, u).mean()

        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()

        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()


class Agent:
    def __init__(self, agent_id):
        self.policy = MADDPG(agent_id)


torch.manual_seed(0)
agents = [Agent(0), Agent(1)]
transitions = {}
for i in range(2):
    transitions['o_%d' % i], transitions['o_next_%d' % i] = torch.randn(8, 4), torch.randn(8, 4)
    transitions['u_%d' % i], transitions['r_%d' % i] = torch.rand(8, 2), torch.randn(8)
for agent in agents:
    other_agents = [a for a in agents if a is not agent]
    agent.policy.train(transitions, other_agents)
