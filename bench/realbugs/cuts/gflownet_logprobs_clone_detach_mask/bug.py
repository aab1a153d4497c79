"""GFlowNet base env: get_logprobs copies the policy outputs with .clone().detach() to write the invalid-action mask, so trajectory balance never trains the policy

Source: https://github.com/alexhernandezgarcia/gflownet/pull/251
Shape: cuts
Symptom: the forward policy never gets a gradient
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class GFlowNetEnv:
    def __init__(self, action_space_dim):
        self.action_space_dim = action_space_dim
        self.logsoftmax = nn.LogSoftmax(dim=1)

    def get_logprobs(self, policy_outputs, actions, mask_invalid_actions=None):
        device = policy_outputs.device
        ns_range = torch.arange(policy_outputs.shape[0]).to(device)
        logits = policy_outputs.clone().detach()  # culprit: GG311
        if mask_invalid_actions is not None:
            logits[mask_invalid_actions] = -torch.inf
        action_indices = actions
        logprobs = self.logsoftmax(logits)[ns_range, action_indices]
        return logprobs


class GFlowNetAgent:
    def __init__(self, env, state_dim):
        self.env = env
        self.forward_policy = nn.Sequential(
            nn.Linear(state_dim, 16), nn.ReLU(), nn.Linear(16, env.action_space_dim)
        )
        self.logZ = nn.Parameter(torch.zeros(1))

    def trajectorybalance_loss(self, states, actions, masks, log_rewards):
        policy_outputs = self.forward_policy(states)
        logprobs_f = self.env.get_logprobs(policy_outputs, actions, masks)
        sumlogprobs = logprobs_f.view(-1, 4).sum(dim=1)  # 4 steps per trajectory
        return (self.logZ + sumlogprobs - log_rewards).pow(2).mean()


env = GFlowNetEnv(action_space_dim=5)
agent = GFlowNetAgent(env, state_dim=3)
opt = torch.optim.Adam(list(agent.forward_policy.parameters()) + [agent.logZ], lr=1e-3)
states = torch.randn(8, 3)            # 2 trajectories x 4 steps
masks = torch.zeros(8, 5, dtype=torch.bool)
masks[:, 4] = True                    # last action invalid everywhere
actions = torch.randint(0, 4, (8,))
log_rewards = torch.randn(2)

loss = agent.trajectorybalance_loss(states, actions, masks, log_rewards)
opt.zero_grad()
loss.backward()
opt.step()
assert all(p.grad is not None for p in agent.forward_policy.parameters()), "the forward policy never gets a gradient"
