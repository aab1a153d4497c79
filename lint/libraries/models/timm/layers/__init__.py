"""``timm.layers``: the activation factory, ``DropPath`` and ``BatchNormAct2d``."""

from timm.layers.activations import GELU, Sigmoid, Tanh
from timm.layers.create_act import create_act_layer, get_act_layer
from timm.layers.drop import DropPath, drop_path
from timm.layers.norm_act import BatchNormAct2d

__all__ = ["GELU", "Sigmoid", "Tanh", "create_act_layer", "get_act_layer", "DropPath",
           "drop_path", "BatchNormAct2d"]
