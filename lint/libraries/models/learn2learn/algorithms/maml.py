"""``learn2learn/algorithms/maml.py`` (learn2learn 0.2.1) as written there, with
``BaseLearner``'s attribute fallback left out and ``allow_nograd``'s gradient of the
parameters that require grad only."""

import torch

from learn2learn.utils import clone_module, update_module


def maml_update(model, lr, grads=None):
    if grads is not None:
        for p, g in zip(list(model.parameters()), grads):
            if g is not None:
                p.update = -lr * g
    return update_module(model)


class MAML(torch.nn.Module):
    def __init__(self, model, lr, first_order=False, allow_unused=None, allow_nograd=False):
        super().__init__()
        self.module = model
        self.lr = lr
        self.first_order = first_order
        self.allow_nograd = allow_nograd
        self.allow_unused = allow_nograd if allow_unused is None else allow_unused

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def adapt(self, loss, first_order=None, allow_unused=None, allow_nograd=None):
        first_order = self.first_order if first_order is None else first_order
        allow_unused = self.allow_unused if allow_unused is None else allow_unused
        allow_nograd = self.allow_nograd if allow_nograd is None else allow_nograd
        second_order = not first_order
        if allow_nograd:
            diff_params = [p for p in self.module.parameters() if p.requires_grad]
            grad_params = iter(torch.autograd.grad(loss, diff_params, retain_graph=second_order,
                                                   create_graph=second_order,
                                                   allow_unused=allow_unused))
            gradients = [next(grad_params) if p.requires_grad else None
                         for p in self.module.parameters()]
        else:
            gradients = torch.autograd.grad(loss, self.module.parameters(),
                                            retain_graph=second_order,
                                            create_graph=second_order,
                                            allow_unused=allow_unused)
        self.module = maml_update(self.module, self.lr, gradients)

    def clone(self, first_order=None, allow_unused=None, allow_nograd=None):
        return MAML(clone_module(self.module), lr=self.lr,
                    first_order=self.first_order if first_order is None else first_order,
                    allow_unused=self.allow_unused if allow_unused is None else allow_unused,
                    allow_nograd=self.allow_nograd if allow_nograd is None else allow_nograd)
