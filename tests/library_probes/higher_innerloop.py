"""Probe of higher: an inner loop with each of copy_initial_weights and track_higher_grads.
Whether the fast weights are leaves and require grad at the start and after each step,
whether fmodel's output requires grad, whether the query loss's backward reaches the
meta-model's parameters, and what diffopt.step does where grad is disabled."""
import json

import higher
import torch
import torch.nn as nn
import torch.nn.functional as F


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def weights(fmodel):
    fast = list(fmodel.parameters())
    return {"leaf": [p.is_leaf for p in fast], "requires_grad": [p.requires_grad for p in fast]}


def run(copy_initial_weights, track_higher_grads):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    inner_opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    with higher.innerloop_ctx(model, inner_opt, copy_initial_weights=copy_initial_weights,
                              track_higher_grads=track_higher_grads) as (fmodel, diffopt):
        record("start", copy=copy_initial_weights, track=track_higher_grads, **weights(fmodel))
        for _ in range(2):
            out = fmodel(x)
            returned = diffopt.step(F.cross_entropy(out, y))
            record("step", out_requires_grad=out.requires_grad,
                   returned_are_fast=all(a is b for a, b in zip(returned, fmodel.parameters())),
                   **weights(fmodel))
        F.cross_entropy(fmodel(x), y).backward()
        record("query_backward", meta_grads=[p.grad is not None for p in model.parameters()])


def without_grad(mode):
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    inner_opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    with mode():
        with higher.innerloop_ctx(model, inner_opt, copy_initial_weights=False) as (fmodel, diffopt):
            out = fmodel(x)
            try:
                diffopt.step(F.cross_entropy(out, y))
                raised = ""
            except RuntimeError as error:
                raised = str(error).split(" and ")[0]
            record("step_without_grad", mode=mode.__name__, out_requires_grad=out.requires_grad,
                   raised=raised)


for copy in (True, False):
    for track in (True, False):
        run(copy, track)
without_grad(torch.no_grad)
without_grad(torch.inference_mode)
