"""A model of ``learn2learn`` for gradguard: its module utilities and MAML. Written from
learn2learn 0.2.1's source (``learn2learn/utils/__init__.py``, ``algorithms/maml.py``,
``algorithms/base_learner.py``, commit db5cee3 of learnables/learn2learn); learn2learn is
not installed next to gradguard's CPU torch (it needs torchvision), so its probe
(``tests/library_probes/learn2learn_maml.py``) has run with the model alone.

- ``clone_module(module)``: a copy of the module whose parameters are ``param.clone()``
  of the originals (non-leaf tensors: a loss on the clone backpropagates into the
  original's parameters, and ``requires_grad`` cannot be set on them).
- ``detach_module(module, keep_requires_grad=False)`` detaches every parameter in place
  (``detach_()``): they stop requiring grad unless ``keep_requires_grad=True`` turns it
  back on where it was on.
- ``update_module(module, updates)``: each parameter becomes ``p + update`` (non-leaf).
- ``algorithms.MAML(model, lr)``: ``clone()`` wraps a ``clone_module`` of the model,
  ``adapt(loss)`` takes ``torch.autograd.grad(loss, parameters, create_graph=not
  first_order)`` and updates the module with ``p - lr * g``.

Left out: buffers (cloned and detached only when they require grad), RNNs'
``flatten_parameters``, ``MetaSGD``/``GBML``, the data, vision, text and gym packages;
``detach_module`` walks ``module.parameters()`` (each shared parameter once) where
learn2learn walks each module's ``_parameters``.
"""

from learn2learn import algorithms
from learn2learn.utils import clone_module, detach_module, update_module

__all__ = ["algorithms", "clone_module", "detach_module", "update_module"]
