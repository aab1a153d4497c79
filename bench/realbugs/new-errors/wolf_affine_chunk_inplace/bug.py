"""wolf's Affine coupling transform: calc_params chunks the coupling net's output into
mu and log_scale and scales log_scale in place (`mul_(0.5).tanh_()`), but chunk's
outputs are views of one multi-output op and cannot be modified in place under autograd.

Source: https://github.com/XuezheMax/wolf/pull/1
Shape: new-errors
Symptom: is a view and is being modified inplace
"""
from typing import Tuple

import torch
import torch.nn as nn


class Transform():
    def calc_params(self, params):
        return params


class Affine(Transform):
    def __init__(self, dim, alpha):
        super().__init__()
        self.dim = dim
        self.alpha = alpha

    def calc_params(self, params):
        mu, log_scale = params.chunk(2, dim=self.dim)
        scale = log_scale.mul_(0.5).tanh_().mul(self.alpha).add(1.0)  # culprit: GG203
        return mu, scale

    @staticmethod
    def fwd(z: torch.Tensor, params) -> Tuple[torch.Tensor, torch.Tensor]:
        mu, scale = params
        z = scale * z + mu
        logdet = scale.log().view(z.size(0), -1).sum(dim=1)
        return z, logdet


class NICE(nn.Module):
    def __init__(self, features=4, hidden=16, alpha=0.5):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features // 2, hidden), nn.ELU(), nn.Linear(hidden, features))
        self.transform = Affine(dim=1, alpha=alpha)

    def forward(self, input: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        z1, z2 = input.chunk(2, dim=1)
        params = self.transform.calc_params(self.net(z1))
        z2, logdet = self.transform.fwd(z2, params)
        return torch.cat([z1, z2], dim=1), logdet


torch.manual_seed(0)
flow = NICE()
optimizer = torch.optim.Adam(flow.parameters(), lr=1e-3)
x = torch.randn(8, 4)
z, logdet = flow(x)
nll = (0.5 * z.pow(2).sum(dim=1) - logdet).mean()
optimizer.zero_grad()
nll.backward()
optimizer.step()
