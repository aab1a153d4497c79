"""MADDPG.learn with each agent's update built from the networks as they are at its turn:
the target actions and values are computed under no_grad, and the online actions mu are
recomputed for each agent after the previous agent's steps (the other agents' detached).
"""
import torch as T
import torch.nn as nn
import torch.nn.functional as F


class ActorNetwork(nn.Module):
    def __init__(self, alpha, input_dims, n_actions):
        super().__init__()
        self.fc1, self.pi = nn.Linear(input_dims, 16), nn.Linear(16, n_actions)
        self.optimizer = T.optim.Adam(self.parameters(), lr=alpha)

    def forward(self, state):
        return T.softmax(self.pi(F.relu(self.fc1(state))), dim=1)


class CriticNetwork(nn.Module):
    def __init__(self, beta, input_dims, n_agents, n_actions):
        super().__init__()
        self.fc1, self.q = nn.Linear(input_dims + n_agents * n_actions, 16), nn.Linear(16, 1)
        self.optimizer = T.optim.Adam(self.parameters(), lr=beta)

    def forward(self, state, action):
        return self.q(F.relu(self.fc1(T.cat([state, action], dim=1))))


class Agent:
    def __init__(self, actor_dims, critic_dims, n_actions, n_agents, alpha=0.01, beta=0.01, gamma=0.95, tau=0.01):
        self.gamma, self.tau = gamma, tau
        self.actor = ActorNetwork(alpha, actor_dims, n_actions)
        self.critic = CriticNetwork(beta, critic_dims, n_agents, n_actions)
        self.target_actor = ActorNetwork(alpha, actor_dims, n_actions)
        self.target_critic = CriticNetwork(beta, critic_dims, n_agents, n_actions)
        self.update_network_parameters(tau=1)

    def update_network_parameters(self, tau=None):
        if tau is None:
            tau = self.tau
        for target, online in ((self.target_actor, self.actor), (self.target_critic, self.critic)):
            target_state_dict = dict(target.named_parameters())
            state_dict = dict(online.named_parameters())
            for name in state_dict:
                state_dict[name] = tau * state_dict[name].clone() + (1 - tau) * target_state_dict[name].clone()
            target.load_state_dict(state_dict)


class MADDPG:
    def __init__(self, actor_dims, critic_dims, n_agents, n_actions):
        self.agents = [Agent(actor_dims[i], critic_dims, n_actions, n_agents) for i in range(n_agents)]

    def learn(self, actor_states, states, actions, rewards, actor_new_states, states_, dones):
        all_agents_new_actions, old_agents_actions = [], []
        with T.no_grad():
            for agent_idx, agent in enumerate(self.agents):
                new_pi = agent.target_actor.forward(actor_new_states[agent_idx])
                all_agents_new_actions.append(new_pi)
                old_agents_actions.append(actions[agent_idx])
            new_actions = T.cat([acts for acts in all_agents_new_actions], dim=1)
        old_actions = T.cat([acts for acts in old_agents_actions], dim=1)

        for agent_idx, agent in enumerate(self.agents):
            with T.no_grad():
                critic_value_ = agent.target_critic.forward(states_, new_actions).flatten()
                critic_value_[dones[:, 0]] = 0.0
            critic_value = agent.critic.forward(states, old_actions).flatten()

            target = rewards[:, agent_idx] + agent.gamma * critic_value_
            critic_loss = F.mse_loss(target, critic_value)
            agent.critic.optimizer.zero_grad()
            critic_loss.backward()
            agent.critic.optimizer.step()

            mu = T.cat([other.actor.forward(actor_states[i]) if i == agent_idx
                        else other.actor.forward(actor_states[i]).detach()
                        for i, other in enumerate(self.agents)], dim=1)
            actor_loss = agent.critic.forward(states, mu).flatten()
            actor_loss = -T.mean(actor_loss)
            agent.actor.optimizer.zero_grad()
            actor_loss.backward()
            agent.actor.optimizer.step()

            agent.update_network_parameters()


T.manual_seed(0)
n_agents, n_actions, actor_dims = 2, 3, [4, 4]
maddpg = MADDPG(actor_dims, sum(actor_dims), n_agents, n_actions)
maddpg.learn([T.randn(8, 4) for _ in range(2)], T.randn(8, 8), [T.rand(8, 3) for _ in range(2)],
             T.randn(8, 2), [T.randn(8, 4) for _ in range(2)], T.randn(8, 8), T.zeros(8, 2, dtype=T.bool))
