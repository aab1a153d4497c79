"""torch.autograd.functional.hessian of a loss w.r.t. a layer weight comes back all zeros

The loss closure takes `weight` but runs layer(_input), which reads layer.weight.
hessian/jacobian hand the closure a detached copy of the input that requires grad,
so the loss never depends on the tensor being differentiated: the result has the
right shape [4, 3, 4, 3] and is silently zero.

Source: https://github.com/pytorch/pytorch/issues/50138
Shape: libraries
Symptom: hessian w.r.t. the layer weight is all zeros
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
_input = torch.randn(32, 3)
layer = nn.Linear(3, 4)
criterion = nn.CrossEntropyLoss()

weight = layer.weight


def func(weight):
    return criterion(layer(_input), torch.zeros(len(_input), dtype=torch.long))  # culprit: -


H = torch.autograd.functional.hessian(func, weight)
print(H.shape)
assert H.abs().sum() > 0, "hessian w.r.t. the layer weight is all zeros"
