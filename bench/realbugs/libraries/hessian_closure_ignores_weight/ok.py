"""Hessian of a loss w.r.t. a layer weight through torch.func.functional_call

Right because the closure runs the layer with the tensor that hessian passes in
(functional_call swaps it in for layer.weight for that call), so the loss depends on
the differentiated input and the [4, 3, 4, 3] Hessian is the real, non-zero one.
"""
import torch
import torch.nn as nn
from torch.func import functional_call

torch.manual_seed(0)
_input = torch.randn(32, 3)
layer = nn.Linear(3, 4)
criterion = nn.CrossEntropyLoss()

weight = layer.weight


def func(weight):
    out = functional_call(layer, {"weight": weight}, (_input,))
    return criterion(out, torch.zeros(len(_input), dtype=torch.long))


H = torch.autograd.functional.hessian(func, weight)
print(H.shape)
assert H.abs().sum() > 0, "hessian w.r.t. the layer weight is all zeros"
