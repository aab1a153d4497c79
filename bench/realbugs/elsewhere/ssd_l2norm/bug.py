"""SSD's L2Norm divides the backbone feature it is handed in place.

The feature is the output of an in-place ReLU picked from the backbone's modules by
name; the ReLU saved it, and the next backbone layer reads it too.

Source: https://github.com/uoip/SSD-variants/issues/4
Shape: elsewhere
Symptom: modified by an inplace operation
"""
import itertools
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn


class L2Norm(nn.Module):
    def __init__(self, n_channels, scale=20):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n_channels))
        nn.init.constant_(self.weight, scale)

    def forward(self, x):
        x /= (x.pow(2).sum(dim=1, keepdim=True).sqrt() + 1e-10)  # culprit: GG201
        out = self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x
        return out


class SSD(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.Base = nn.Sequential(OrderedDict([
            ("conv4_3", nn.Conv2d(3, 8, 3, padding=1)),
            ("pool4", nn.MaxPool2d(2)),
            ("conv7", nn.Conv2d(8, 8, 3, padding=1)),
        ]))
        self.Extra = nn.Sequential(OrderedDict([
            ("extra1_2", nn.Conv2d(8, 8, 3, padding=1, stride=2)),
        ]))
        self.pred_layers = ["conv4_3", "conv7", "extra1_2"]
        self.L2Norm = nn.ModuleList([L2Norm(8, 20)])
        self.norm_layers = ["conv4_3"]
        self.Conf = nn.ModuleList(nn.Conv2d(8, n_classes, 3, padding=1) for _ in self.pred_layers)

    def forward(self, x):
        xs = []
        for name, m in itertools.chain(self.Base._modules.items(), self.Extra._modules.items()):
            if isinstance(m, nn.Conv2d):
                x = F.relu(m(x), inplace=True)
            else:
                x = m(x)
            if name in self.pred_layers:
                if name in self.norm_layers:
                    i = self.norm_layers.index(name)
                    xs.append(self.L2Norm[i](x))
                else:
                    xs.append(x)
        return torch.cat([conf(x).flatten(1) for conf, x in zip(self.Conf, xs)], dim=1)


torch.manual_seed(0)
model = SSD()
model(torch.randn(2, 3, 16, 16)).pow(2).mean().backward()
