"""A model of ``torchvision`` for gradguard: the building blocks whose activations write in
place, and the image utilities. Written from torchvision's source: ``utils.py`` as stored
at pytorch/vision 0002677 (0.12; ``make_grid`` has not changed since where autograd can
tell), ``ops/misc.py``, ``ops/stochastic_depth.py`` and ``models/resnet.py`` as in
torchvision 0.20 (the repository's snapshot is too large to fetch here:
``ConvNormActivation`` was checked against a copy of ``misc.py`` in the public code index).
torchvision is not installed next to gradguard's CPU torch, so its probe
(``tests/library_probes/torchvision_blocks.py``) has run with the model alone.

- ``ops``: ``Conv2dNormActivation``/``Conv3dNormActivation`` (convolution, norm, then the
  activation built with ``inplace=True`` by default), ``MLP`` (``Linear``, norm,
  activation and ``Dropout`` per hidden layer, each built with ``inplace`` only where it
  is given: ``MLP(..., inplace=True)`` puts an in-place ``Dropout`` after an in-place
  ``ReLU``), ``SqueezeExcitation`` (``scale * input``), ``StochasticDepth``.
- ``models.resnet``: ``BasicBlock`` and ``Bottleneck`` with their shared
  ``ReLU(inplace=True)`` and ``out += identity``.
- ``utils.make_grid`` runs under ``torch.no_grad()`` and, with ``normalize=True``,
  normalises a ``clone()`` of its argument (since torchvision 0.2.1; 0.1.9 normalised the
  argument itself); ``save_image`` calls it and writes no tensor of the caller's.

Left out: the pretrained model builders and weights, detection and video ops, datasets
and transforms (unknown to the engine, as without a model).
"""

from torchvision import models, ops, utils

__all__ = ["models", "ops", "utils"]
