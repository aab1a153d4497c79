"""ColossalAI PR #1460/#1510: a checkpoint region whose first op is in place uses use_reentrant=False, which
recomputes through saved_tensors_hooks on the original inputs instead of detached leaf copies."""
import weakref
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import check_backward_validity, detach_variable

# --- colossalai/utils/activation_checkpoint.py, ColossalAI after PR #1460 (rng-state and cpu-offload handling left out) ---
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

def checkpoint(function, activation_offload, *args, use_reentrant: bool = True):
    if use_reentrant:
        return CheckpointFunction.apply(function, activation_offload, *args)
    return _checkpoint_without_reentrant(function, activation_offload, *args)
def _checkpoint_without_reentrant(function, activation_offload=False, *args):
    storage, weak_holder_list = weakref.WeakKeyDictionary(), []
    class Holder():
        pass
    def pack(x):
        res = Holder()
        weak_holder_list.append(weakref.ref(res))
        return res
    def unpack(x):
        unpack_counter = 0
        if len(storage) == 0:
            def inner_pack(inner):
                nonlocal unpack_counter
                unpack_counter += 1
                if weak_holder_list[unpack_counter - 1]() is not None:
                    storage[weak_holder_list[unpack_counter - 1]()] = inner.detach()
            def inner_unpack(packed):
                raise RuntimeError("You are calling backwards on a tensor that is never exposed.")
            with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(inner_pack, inner_unpack):
                _unused = function(*args)
        return storage[x]
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        output = function(*args)
    return output

# --- the model, as ColossalAI's fx activation-checkpoint codegen emits it (tests/test_fx/test_codegen) ---
class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(4, 4), nn.Linear(4, 4)
    def ckpt2(self, x):
        return F.relu(x, inplace=True)
    def ckpt3(self, x):
        return self.linear2(x)
    def forward(self, x):
        linear1 = self.linear1(x)
        relu = checkpoint(self.ckpt2, False, linear1, use_reentrant=False)
        linear2 = checkpoint(self.ckpt3, False, relu)
        return linear2

model, x = MyModule(), torch.randn(8, 4)
model(x).sum().backward()
g = model.linear1.weight.grad.clone()
model.zero_grad()
model.linear2(F.relu(model.linear1(x))).sum().backward()  # the same model without checkpointing
assert torch.allclose(g, model.linear1.weight.grad)
