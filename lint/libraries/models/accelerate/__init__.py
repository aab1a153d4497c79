"""A model of ``accelerate`` for gradguard: what an ``Accelerator`` does to autograd in one
process on the CPU. Checked against accelerate 1.15.0 (``tests/library_probes/accelerate_*``).

- ``backward(loss)`` backpropagates ``loss / gradient_accumulation_steps``.
- ``accumulate(model)``: a context that counts the steps and says on which ones gradients
  are synchronised (``sync_gradients``: every ``gradient_accumulation_steps``-th; always
  with one step, the default).
- ``prepare`` hands back what it is given (the model itself; the optimizer wrapped so that
  ``step()`` and ``zero_grad()`` act only where gradients are synchronised).
- ``unwrap_model`` hands back the model; ``clip_grad_norm_`` is torch's.

Left out (unknown to the engine, as without a model): several processes, mixed precision
and its scaler, DeepSpeed, FSDP, Megatron, the dataloader's end-of-data synchronisation,
trackers and checkpoints.
"""

import torch


class _AcceleratedOptimizer:
    def __init__(self, optimizer, accelerator):
        self.optimizer = optimizer
        self.accelerator = accelerator
        self.param_groups = optimizer.param_groups

    def step(self, closure=None):
        if self.accelerator.sync_gradients:
            self.optimizer.step()

    def zero_grad(self, set_to_none=None):
        if self.accelerator.sync_gradients:
            self.optimizer.zero_grad()


class _Accumulation:
    def __init__(self, accelerator):
        self.accelerator = accelerator

    def __enter__(self):
        accelerator = self.accelerator
        accelerator.step += 1
        accelerator.sync_gradients = accelerator.gradient_accumulation_steps == 1 \
            or accelerator.step % accelerator.gradient_accumulation_steps == 0
        return None

    def __exit__(self, *exc):
        return False


class Accelerator:
    def __init__(self, *args, gradient_accumulation_steps=1, **kwargs):
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.sync_gradients = True
        self.step = 0
        self.device = torch.device("cpu")

    def prepare(self, *args, device_placement=None):
        prepared = []
        for obj in args:
            if isinstance(obj, torch.optim.Optimizer):
                prepared.append(_AcceleratedOptimizer(obj, self))
            else:
                prepared.append(obj)
        if len(prepared) == 1:
            return prepared[0]
        return tuple(prepared)

    def accumulate(self, *models):
        return _Accumulation(self)

    # accelerate passes ``**kwargs`` on to ``loss.backward``: spelled out here, so that
    # what the user passes (``retain_graph=True``, or nothing) is known
    def backward(self, loss, retain_graph=None, create_graph=False, inputs=None):
        loss = loss / self.gradient_accumulation_steps
        loss.backward(retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    def unwrap_model(self, model, keep_fp32_wrapper=True, keep_torch_compile=True):
        return model

    def clip_grad_norm_(self, parameters, max_norm, norm_type=2):
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=norm_type)

    def gather(self, tensor):
        return tensor

    def gather_for_metrics(self, input_data, use_gather_object=False):
        return input_data

    def wait_for_everyone(self):
        return None

    def print(self, *args, **kwargs):
        return None
