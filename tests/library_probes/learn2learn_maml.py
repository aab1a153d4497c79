"""Probe of learn2learn: what clone_module, detach_module and MAML's clone and adapt make
of a network's parameters (leaves or not, requiring grad or not), whether setting
requires_grad on a clone's parameter raises, and where a loss on the adapted clone sends
its gradient."""
import json

import learn2learn as l2l
import torch
import torch.nn as nn


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def flags(module):
    params = list(module.parameters())
    return {"leaf": [p.is_leaf for p in params], "requires_grad": [p.requires_grad for p in params]}


def freeze(module):
    try:
        next(module.parameters()).requires_grad = False
        return ""
    except RuntimeError as error:
        return str(error).split(".")[0]


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))

clone = l2l.clone_module(net)
record("clone_module", freeze=freeze(clone), **flags(clone))
for keep in (False, True):
    detached = l2l.clone_module(net)
    l2l.detach_module(detached, keep_requires_grad=keep)
    record("detach_module", keep=keep, output_requires_grad=detached(x).requires_grad,
           **flags(detached))

maml = l2l.algorithms.MAML(net, lr=0.1)
learner = maml.clone()
record("maml_clone", **flags(learner))
learner.adapt(nn.functional.cross_entropy(learner(x), y))
record("maml_adapt", **flags(learner))
nn.functional.cross_entropy(learner(x), y).backward()
record("query_backward", meta_grads=[p.grad is not None for p in net.parameters()])
