"""A model of ``timm`` for gradguard: the activation factory of ``timm.layers`` and the
layers it builds, ``DropPath`` and ``BatchNormAct2d``. Written from timm 1.0's source
(``timm/layers/create_act.py``, ``activations.py``, ``drop.py``, ``norm_act.py``; commit
aa4b585 of huggingface/pytorch-image-models); timm's wheel pulls a CUDA torch, so it is not
installed next to gradguard's CPU torch and its probe (``tests/library_probes/
timm_layers.py``) has run with the model alone.

- ``layers.get_act_layer(name)``: the layer class a name stands for (``"relu"`` is
  ``nn.ReLU``; ``"sigmoid"``, ``"tanh"``, ``"gelu"`` are timm's own classes, whose
  ``inplace=True`` makes ``Sigmoid`` and ``Tanh`` write their input: ``x.sigmoid_()``);
  ``create_act_layer(name, inplace=None)`` builds it, with ``inplace`` only where given.
- ``layers.BatchNormAct2d(..., act_layer=nn.ReLU, inplace=True)``: batch norm, then its
  activation built in place by default.
- ``layers.DropPath``/``drop_path``: ``x * mask`` in training, ``x`` itself otherwise.

Left out: the memory-efficient custom-autograd activations (``*Me``: timm picks them only
for names torch has no layer for), the export and scripting switches, the other norm-act
layers, ``timm.utils.ModelEma*``, the models and their builders.
"""

from timm import layers

__all__ = ["layers"]
