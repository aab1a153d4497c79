"""``timm/layers/create_act.py`` (timm 1.0): ``get_act_layer`` and ``create_act_layer`` for
the default (not export-specific) layers; the names' table written out as tests."""

from torch import nn

from timm.layers.activations import GELU, Sigmoid, Tanh


def get_act_layer(name="relu"):
    if name is None:
        return None
    if not isinstance(name, str):
        return name  # a class or a callable
    if not name:
        return None
    return _default_layer(name.lower())


def _default_layer(name):
    """``_ACT_LAYER_DEFAULT[name]`` (torch 1.9 and later: torch has every layer named)."""
    if name in ("silu", "swish"):
        return nn.SiLU
    if name == "mish":
        return nn.Mish
    if name == "relu":
        return nn.ReLU
    if name == "relu6":
        return nn.ReLU6
    if name == "leaky_relu":
        return nn.LeakyReLU
    if name == "elu":
        return nn.ELU
    if name == "celu":
        return nn.CELU
    if name == "selu":
        return nn.SELU
    if name == "gelu":
        return GELU
    if name == "sigmoid":
        return Sigmoid
    if name == "tanh":
        return Tanh
    if name in ("hard_sigmoid", "hardsigmoid"):
        return nn.Hardsigmoid
    if name in ("hard_swish", "hardswish"):
        return nn.Hardswish
    if name == "identity":
        return nn.Identity
    raise KeyError(name)


def create_act_layer(name, inplace=None, **kwargs):
    act_layer = get_act_layer(name)
    if act_layer is None:
        return None
    if inplace is None:
        return act_layer(**kwargs)
    if isinstance(name, str):  # every layer of the table takes ``inplace``
        return act_layer(inplace=inplace, **kwargs)
    try:
        return act_layer(inplace=inplace, **kwargs)
    except TypeError:  # the layer takes no ``inplace``
        return act_layer(**kwargs)
