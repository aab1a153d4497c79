"""rai-toolbox's freeze() context: given a perturbation computed from a tensor that
requires grad (not a leaf), it calls param.requires_grad_(False) on it, which raises.

Source: https://github.com/mit-ll-responsible-ai/responsible-ai-toolbox/issues/24
Shape: elsewhere
Symptom: you can only change requires_grad flags of leaf variables
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
                param.requires_grad_(False)  # culprit: GG103

    def restore_state():
        for p, requires_grad in param_states.items():
            p.requires_grad_(requires_grad)

    return restore_state


model = nn.Linear(2, 1)
base = tr.arange(2.0, requires_grad=True)
perturbation = 2 * base
restore = freeze(model, perturbation)
loss = model(perturbation + 1).sum()
restore()
