"""``torchvision.ops``: the layers of ``misc.py`` and ``stochastic_depth.py``."""

from torchvision.ops.misc import (
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    SqueezeExcitation,
)
from torchvision.ops.stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["MLP", "Conv2dNormActivation", "Conv3dNormActivation", "SqueezeExcitation",
           "StochasticDepth", "stochastic_depth"]
