"""``timm/layers/activations.py`` (timm 1.0): timm's own activation layers that take
``inplace``, as written there."""

import torch.nn.functional as F
from torch import nn


class Sigmoid(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return x.sigmoid_() if self.inplace else x.sigmoid()


class Tanh(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return x.tanh_() if self.inplace else x.tanh()


class GELU(nn.Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, input):
        return F.gelu(input)
