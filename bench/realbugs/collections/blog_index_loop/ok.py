"""The post's fix: add a one-hot row out of place, so the saved b is never written."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, size=10):
        super().__init__()
        self.size = size
        self.param = nn.Parameter(torch.randn(size, size) / size)

    def forward(self, a):
        y = 0
        b = torch.mm(self.param, a)
        for i in range(self.size):
            bione = torch.zeros(self.size, 1)
            bione[i] = 1
            b = b + bione
            y = y + torch.mm(self.param, b)
        return y


torch.manual_seed(0)
net = Net()
out = net(torch.randn(10, 1))
out.sum().backward()
