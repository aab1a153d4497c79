"""Meta-learner restores the initial weights with load_state_dict before the meta backward.

Source: https://github.com/RobinLu1209/ST-GFSL/issues/3
Shape: elsewhere
Symptom: modified by an inplace operation
"""
from collections import OrderedDict
from copy import deepcopy

import torch
import torch.nn.functional as F
from torch import nn


class STNet(nn.Module):
    def __init__(self, dim=4, hidden=8):
        super().__init__()
        self.encoder = nn.Linear(dim, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


class STMAML:
    def __init__(self, model, update_lr=0.1, meta_lr=0.01):
        self.net = model
        self.update_lr = update_lr
        self.meta_optim = torch.optim.Adam(self.net.parameters(), lr=meta_lr)

    def meta_train_step(self, support, query):
        init_model = deepcopy(self.net)
        inner_optim = torch.optim.SGD(self.net.parameters(), lr=self.update_lr)
        loss_s = F.mse_loss(self.net(support[0]), support[1])
        inner_optim.zero_grad()
        loss_s.backward()
        inner_optim.step()
        loss_q = F.mse_loss(self.net(query[0]), query[1])
        new_paras = OrderedDict(zip(self.net.state_dict().keys(),
                                    list(init_model.state_dict().values())))
        self.net.load_state_dict(new_paras)  # culprit: GG202
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()
        return loss_q.item()


torch.manual_seed(0)
maml = STMAML(STNet())
support = (torch.randn(6, 4), torch.randn(6, 1))
query = (torch.randn(6, 4), torch.randn(6, 1))
maml.meta_train_step(support, query)
