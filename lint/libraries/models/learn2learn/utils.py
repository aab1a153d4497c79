"""``learn2learn/utils/__init__.py`` (learn2learn 0.2.1): ``clone_module`` and
``update_module`` as written there for parameters (buffers left out), ``detach_module``
over ``module.parameters()``."""

import torch


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
    for param in module.parameters():
        requires_grad = param.requires_grad
        param.detach_()
        if keep_requires_grad and requires_grad:
            param.requires_grad_()


def update_module(module, updates=None, memo=None):
    if memo is None:
        memo = {}
    if updates is not None:
        for p, g in zip(list(module.parameters()), updates):
            p.update = g
    for param_key in module._parameters:
        p = module._parameters[param_key]
        if p in memo:
            module._parameters[param_key] = memo[p]
        elif p is not None and hasattr(p, "update") and p.update is not None:
            updated = p + p.update
            p.update = None
            memo[p] = updated
            module._parameters[param_key] = updated
    for module_key in module._modules:
        module._modules[module_key] = update_module(module._modules[module_key], updates=None,
                                                    memo=memo)
    return module
