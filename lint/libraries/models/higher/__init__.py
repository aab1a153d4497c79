"""A model of ``higher`` for gradguard: what an inner loop does to autograd. Written from
higher 0.2.1 (``higher/__init__.py``, ``patch.py``, ``optim.py``) and checked against it
(``tests/library_probes/higher_innerloop.py``).

- ``innerloop_ctx(model, opt, copy_initial_weights=True, track_higher_grads=True)`` yields
  ``(fmodel, diffopt)``. The fast weights ``fmodel`` starts from are detached copies of
  ``model``'s parameters that require grad (leaves: the meta-model gets no gradient
  through them) with ``copy_initial_weights=True``, and ``p.clone()`` of each (non-leaf:
  the graph reaches the meta-parameters) with ``False``.
- ``fmodel(x)`` runs ``model``'s forward with the current fast weights in place of its
  parameters (``torch.func.functional_call``; higher builds a patched class that does the
  same); ``fmodel.parameters()`` and ``fast_params`` are those fast weights.
- ``diffopt.step(loss)`` takes ``torch.autograd.grad(loss, fast weights,
  create_graph=track_higher_grads, allow_unused=True)`` (a fast weight that does not
  require grad is replaced by a fresh leaf in the call), computes the new fast weights
  from the old ones and the gradients, and hands them to ``fmodel``; with
  ``track_higher_grads=False`` each new fast weight is ``p.detach().requires_grad_()``,
  a leaf, so the query loss's backward stops there.

Left out: the optimizers' own update rules (every step here is plain SGD's
``p - lr * g``: the values differ from Adam's, what autograd sees does not: a fast weight
computed from the previous one and its gradient), ``override``, ``grad_callback``,
``device``, buffers (``fmodel`` uses ``model``'s own), ``time=`` on ``parameters()``.
"""

import torch


class _PatchedModule:
    """``fmodel``: ``module`` run with its fast weights in place of its parameters."""

    def __init__(self, module, params, track_higher_grads):
        self._module = module
        self._names = [name for name, _ in module.named_parameters()]
        self.track_higher_grads = track_higher_grads
        self.fast_params = params

    def __call__(self, *args, params=None, **kwargs):
        if params is not None:
            self.update_params(params)
        weights = dict(zip(self._names, self.fast_params))
        return torch.func.functional_call(self._module, weights, args, kwargs)

    def forward(self, *args, params=None, **kwargs):
        return self(*args, params=params, **kwargs)

    def update_params(self, params):
        self.fast_params = list(params)

    def parameters(self, time=None):
        return iter(self.fast_params)

    def train(self, mode=True):
        self._module.train(mode)
        return self

    def eval(self):
        return self.train(False)


class DifferentiableOptimizer:
    """``diffopt``: steps ``fmodel``'s fast weights with a gradient it keeps the graph of."""

    def __init__(self, other, reference_params, fmodel=None, device=None, override=None,
                 grad_callback=None, track_higher_grads=True, **kwargs):
        self._fmodel = fmodel
        self._track_higher_grads = track_higher_grads
        self._lr = other.param_groups[0]["lr"]

    def step(self, loss, params=None, override=None, grad_callback=None, **kwargs):
        if params is None:
            params = self._fmodel.fast_params
        params = list(params)
        targets = [p if p.requires_grad else torch.tensor([], requires_grad=True)
                   for p in params]
        grads = torch.autograd.grad(loss, targets, create_graph=self._track_higher_grads,
                                    allow_unused=True)
        new_params = []
        for p, g in zip(params, grads):
            updated = p if g is None else p - self._lr * g
            if not self._track_higher_grads:
                updated = updated.detach().requires_grad_()
            new_params.append(updated)
        if self._fmodel is not None:
            self._fmodel.update_params(new_params)
        return new_params


class _InnerLoop:
    def __init__(self, fmodel, diffopt):
        self.fmodel = fmodel
        self.diffopt = diffopt

    def __enter__(self):
        return self.fmodel, self.diffopt

    def __exit__(self, *exc):
        return False


def monkeypatch(module, device=None, copy_initial_weights=True, track_higher_grads=True):
    if copy_initial_weights:
        params = [p.detach().clone().requires_grad_(p.requires_grad)
                  for p in module.parameters()]
    else:
        params = [p.clone() for p in module.parameters()]
    return _PatchedModule(module, params, track_higher_grads)


def innerloop_ctx(model, opt, device=None, copy_initial_weights=True, override=None,
                  track_higher_grads=True):
    fmodel = monkeypatch(model, device, copy_initial_weights=copy_initial_weights,
                         track_higher_grads=track_higher_grads)
    diffopt = DifferentiableOptimizer(opt, model.parameters(), fmodel=fmodel,
                                      track_higher_grads=track_higher_grads)
    return _InnerLoop(fmodel, diffopt)
