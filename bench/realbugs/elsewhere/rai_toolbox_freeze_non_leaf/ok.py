"""freeze() given only leaf tensors, as the issue settles: the caller detaches the computed
perturbation first (the toolbox's utilities that call freeze do the same).
"""
import torch as tr
import torch.nn as nn


def freeze(*items):
    param_states = {}
    for item in items:
        params = item.parameters() if isinstance(item, nn.Module) else [item]
        for param in params:
            if param not in param_states:
                param_states[param] = param.requires_grad
                param.requires_grad_(False)

    def restore_state():
        for p, requires_grad in param_states.items():
            p.requires_grad_(requires_grad)

    return restore_state


model = nn.Linear(2, 1)
base = tr.arange(2.0, requires_grad=True)
perturbation = 2 * base
restore = freeze(model, perturbation.detach())
loss = model(perturbation + 1).sum()
restore()
