"""A forward that bumps rows of a matmul result in a loop, after another matmul saved it.

Source: https://www.yongfengli.tk/2018/04/13/inplace-operation-in-pytorch.html
Shape: collections
Symptom: modified by an inplace operation
"""
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
            b[i] = b[i] + 1  # culprit: GG201
            y = y + torch.mm(self.param, b)
        return y


torch.manual_seed(0)
net = Net()
out = net(torch.randn(10, 1))
out.sum().backward()
