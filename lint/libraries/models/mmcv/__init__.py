"""A model of ``mmcv`` for gradguard: ``mmcv.cnn``'s convolution block and the builders of
its layers. Written from mmcv 2.2.0's source (``mmcv/cnn/bricks/conv_module.py``,
``activation.py``, ``norm.py``, ``conv.py``; commit a8073c7 of open-mmlab/mmcv); mmcv is
compiled and not installed next to gradguard's CPU torch, so its probe
(``tests/library_probes/mmcv_conv_module.py``) has run with the model alone.

- ``cnn.ConvModule(..., act_cfg=dict(type='ReLU'), inplace=True, order=('conv', 'norm',
  'act'))``: its activation is built with ``inplace=True`` unless ``act_cfg`` says
  otherwise (not for Tanh, PReLU, Sigmoid, HSigmoid, Swish, GELU), so the block's output
  is an in-place ReLU's result, which the ReLU saved for backward.
- ``cnn.build_activation_layer(cfg)``: the torch layer ``cfg['type']`` names, with the
  rest of ``cfg`` as its arguments (``nn.ReLU()``, out of place, without ``inplace``);
  ``build_norm_layer(cfg, num_features)`` (``(name, layer)``), ``build_conv_layer``.

Left out: the registry (only the torch layers mmcv registers under those names), spectral
norm, explicit padding layers, ``efficient_conv_bn_eval``, weight initialisation.
"""

from mmcv import cnn

__all__ = ["cnn"]
