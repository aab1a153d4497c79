"""A model of ``torchvision`` for gradguard: the building blocks whose activations write in
place, and the image utilities. Written from torchvision 0.20's source (``torchvision/
ops/misc.py``, ``ops/stochastic_depth.py``, ``utils.py``, ``models/resnet.py``); torchvision
is not installed next to gradguard's CPU torch, so its probes
(``tests/library_probes/torchvision_blocks.py``) have run with the model alone.

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
