"""ColossalAI activation checkpoint (reentrant) around a region whose first op is an in-place ReLU: the
backward recomputation runs the region on detach_variable()'d inputs, which are leaves requiring grad.

Source: https://github.com/hpcaitech/ColossalAI/pull/1460
Shape: libraries
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import check_backward_validity, detach_variable


# --- colossalai/utils/activation_checkpoint.py, ColossalAI 0.1.9, before PR #1460 (rng-state and cpu-offload handling left out) ---
class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, activation_offload=False, *args):
        check_backward_validity(args)
        ctx.run_function, ctx.activation_offload = run_function, activation_offload
        with torch.no_grad():
            outputs = run_function(*args)
        ctx.save_for_backward(*args)  # (all inputs here are tensors: the non-tensor bookkeeping is left out)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        detached_inputs = detach_variable(tuple(ctx.saved_tensors))
        with torch.enable_grad():
            outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        torch.autograd.backward(outputs, args)
        grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None for inp in detached_inputs)
        return (None, None) + grads

def checkpoint(function, activation_offload, *args):
    return CheckpointFunction.apply(function, activation_offload, *args)


# --- the model, as ColossalAI's fx activation-checkpoint codegen emits it (tests/test_fx/test_codegen) ---
class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(4, 4)
        self.linear2 = nn.Linear(4, 4)

    def ckpt2(self, x):
        return F.relu(x, inplace=True)

    def ckpt3(self, x):
        return self.linear2(x)

    def forward(self, x):
        linear1 = self.linear1(x)
        relu = checkpoint(self.ckpt2, False, linear1)  # culprit: -
        linear2 = checkpoint(self.ckpt3, False, relu)
        return linear2


model = MyModule()
model(torch.randn(8, 4)).sum().backward()
print(model.linear1.weight.grad.norm())
