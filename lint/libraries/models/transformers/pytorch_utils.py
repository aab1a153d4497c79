"""A model of ``transformers.pytorch_utils`` for gradguard: GPT-2's ``Conv1D``, a linear
layer whose weight is kept transposed. Checked against transformers 5.24.0
(``pytorch_utils.py``)."""

import torch
import torch.nn as nn


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(
            *x.shape[:-1], self.nf)
