"""Probe of accelerate: one process on the CPU, with and without gradient accumulation.
What backward scales, on which micro-steps gradients are synchronised and the prepared
optimizer steps and zeroes, what prepare and unwrap_model hand back."""
import json

import torch
import torch.nn as nn
from accelerate import Accelerator


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def run(steps):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    accelerator = Accelerator(gradient_accumulation_steps=steps)
    prepared_model, prepared_optimizer = accelerator.prepare(model, optimizer)
    record("prepare", steps=steps, same_model=prepared_model is model,
           unwrapped_is_model=accelerator.unwrap_model(prepared_model) is model)
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(4)]
    for x, y in batches:
        with accelerator.accumulate(prepared_model):
            loss = nn.functional.mse_loss(prepared_model(x), y)
            plain = torch.autograd.grad(loss, model.weight, retain_graph=True)[0]
            before = model.weight.grad.clone() if model.weight.grad is not None \
                else torch.zeros_like(model.weight)
            accelerator.backward(loss)
            added = model.weight.grad - before
            weight = model.weight.detach().clone()
            prepared_optimizer.step()
            stepped = not torch.equal(weight, model.weight.detach())
            prepared_optimizer.zero_grad()
            record("micro_step", sync=bool(accelerator.sync_gradients), stepped=stepped,
                   scale=round(float(added.norm() / plain.norm()), 4),
                   zeroed=model.weight.grad is None)


run(1)
run(2)
