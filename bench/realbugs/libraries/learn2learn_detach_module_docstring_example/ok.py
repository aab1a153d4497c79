"""learn2learn detach_module example as fixed in the issue (PR #311): keep_requires_grad=True
makes the detached clone's parameters require grad again, so backward fills the clone's
gradients and leaves net untouched.
"""
import torch
from torch import nn


# learn2learn/utils/__init__.py (learn2learn 0.1.7), buffers and RNN handling left out
def clone_module(module, memo=None):
    if memo is None:
        memo = {}
    if not isinstance(module, torch.nn.Module):
        return module
    clone = module.__new__(type(module))
    clone.__dict__ = module.__dict__.copy()
    clone._parameters = clone._parameters.copy()
    clone._buffers = clone._buffers.copy()
    clone._modules = clone._modules.copy()
    for param_key in module._parameters:
        if module._parameters[param_key] is not None:
            param = module._parameters[param_key]
            param_ptr = param.data_ptr
            if param_ptr in memo:
                clone._parameters[param_key] = memo[param_ptr]
            else:
                cloned = param.clone()
                clone._parameters[param_key] = cloned
                memo[param_ptr] = cloned
    for module_key in clone._modules:
        clone._modules[module_key] = clone_module(module._modules[module_key], memo=memo)
    return clone


def detach_module(module, keep_requires_grad=False):
    if not isinstance(module, torch.nn.Module):
        return
    for param_key in module._parameters:
        if module._parameters[param_key] is not None:
            requires_grad = module._parameters[param_key].requires_grad
            detached = module._parameters[param_key].detach_()
            if keep_requires_grad and requires_grad:
                module._parameters[param_key].requires_grad_()
    for module_key in module._modules:
        detach_module(module._modules[module_key], keep_requires_grad=keep_requires_grad)


torch.manual_seed(0)
loss = nn.CrossEntropyLoss()
X, y = torch.randn(8, 20), torch.randint(0, 2, (8,))
net = nn.Sequential(nn.Linear(20, 10), nn.ReLU(), nn.Linear(10, 2))
clone = clone_module(net)
detach_module(clone, keep_requires_grad=True)
error = loss(clone(X), y)
error.backward()  # Gradients are back-propagated on clone, not net.
assert all(p.grad is not None for p in clone.parameters())
assert all(p.grad is None for p in net.parameters())
