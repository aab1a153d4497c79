"""Dreamer_PyTorch's train loop reordered as the thread did: the action model is updated
first, while the value model still has the weights lambda_target_values saved; the value
loss reads the imagined trajectory detached, so its backward stays in the value model.
"""
import torch
import torch.nn as nn
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_

state_dim, rnn_hidden_dim, action_dim, horizon = 6, 8, 2, 3


class RecurrentStateSpaceModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRUCell(state_dim + action_dim, rnn_hidden_dim)
        self.fc_prior = nn.Linear(rnn_hidden_dim, 2 * state_dim)

    def prior(self, state, action, rnn_hidden):
        rnn_hidden = self.rnn(torch.cat([state, action], dim=1), rnn_hidden)
        mean, std = self.fc_prior(rnn_hidden).chunk(2, dim=1)
        return torch.distributions.Normal(mean, nn.functional.softplus(std) + 0.1), rnn_hidden


class MLPModel(nn.Module):
    def __init__(self, out_dim, last=None):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim + rnn_hidden_dim, 16), nn.ELU(), nn.Linear(16, out_dim))
        self.last = last

    def forward(self, state, rnn_hidden):
        out = self.net(torch.cat([state, rnn_hidden], dim=1))
        return self.last(out) if self.last else out


def lambda_target(rewards, values, gamma, lambda_):
    V_lambda = torch.zeros_like(rewards)
    H = rewards.shape[0] - 1
    V_n = torch.zeros_like(rewards)
    V_n[H] = values[H]
    for n in range(1, H + 1):
        V_n[:-n] = (gamma ** n) * values[n:]
        for k in range(1, n + 1):
            V_n[:-n] += (gamma ** (k - 1)) * rewards[k:-n + k] if k != n else (gamma ** (n - 1)) * rewards[n:]
        V_lambda += (lambda_ ** (n - 1)) * V_n if n != H else (lambda_ ** (H - 1)) * V_n
    return (1 - lambda_) * V_lambda


torch.manual_seed(0)
rssm = RecurrentStateSpaceModel()
reward_model, value_model = MLPModel(1), MLPModel(1)
action_model = MLPModel(action_dim, last=torch.tanh)
value_optimizer = torch.optim.Adam(value_model.parameters(), lr=8e-5)
action_optimizer = torch.optim.Adam(action_model.parameters(), lr=8e-5)

for update_step in range(2):
    flatten_states = torch.randn(4, state_dim)
    flatten_rnn_hiddens = torch.randn(4, rnn_hidden_dim)
    imaginated_states = torch.zeros(horizon + 1, *flatten_states.shape)
    imaginated_rnn_hiddens = torch.zeros(horizon + 1, *flatten_rnn_hiddens.shape)
    imaginated_states[0] = flatten_states
    imaginated_rnn_hiddens[0] = flatten_rnn_hiddens
    for h in range(1, horizon + 1):
        actions = action_model(flatten_states, flatten_rnn_hiddens)
        flatten_states_prior, flatten_rnn_hiddens = rssm.prior(flatten_states, actions, flatten_rnn_hiddens)
        flatten_states = flatten_states_prior.rsample()
        imaginated_states[h] = flatten_states
        imaginated_rnn_hiddens[h] = flatten_rnn_hiddens

    flatten_imaginated_states = imaginated_states.view(-1, state_dim)
    flatten_imaginated_rnn_hiddens = imaginated_rnn_hiddens.view(-1, rnn_hidden_dim)
    imaginated_rewards = reward_model(flatten_imaginated_states, flatten_imaginated_rnn_hiddens).view(horizon + 1, -1)
    imaginated_values = value_model(flatten_imaginated_states, flatten_imaginated_rnn_hiddens).view(horizon + 1, -1)
    lambda_target_values = lambda_target(imaginated_rewards, imaginated_values, 0.9, 0.95)

    value_predictions = value_model(flatten_imaginated_states.detach(),
                                    flatten_imaginated_rnn_hiddens.detach()).view(horizon + 1, -1)
    value_loss = 0.5 * mse_loss(value_predictions, lambda_target_values.detach())

    action_loss = -1 * (lambda_target_values.mean())
    action_optimizer.zero_grad()
    action_loss.backward()
    clip_grad_norm_(action_model.parameters(), 100)
    action_optimizer.step()

    value_optimizer.zero_grad()
    value_loss.backward()
    clip_grad_norm_(value_model.parameters(), 100)
    value_optimizer.step()
