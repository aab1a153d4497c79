"""``mmcv.cnn``: ``ConvModule`` and the layer builders of ``mmcv/cnn/bricks``."""

import torch.nn as nn

# the activations mmcv builds without adding ``inplace`` (``conv_module.py``)
_NOT_INPLACE = ("Tanh", "PReLU", "Sigmoid", "HSigmoid", "Swish", "GELU")


def build_activation_layer(cfg):
    """The torch activation ``cfg['type']`` names, built with the rest of ``cfg``."""
    return _build_activation(cfg, False)


def _build_activation(cfg, inplace_default):
    """``build_activation_layer`` of ``cfg`` with ``inplace`` set to ``inplace_default``
    where ``cfg`` does not set it (``ConvModule``'s ``act_cfg_.setdefault('inplace',
    inplace)``)."""
    kind = cfg["type"]
    if kind in ("ReLU", "ReLU6", "SiLU", "ELU", "LeakyReLU", "RReLU"):
        inplace = cfg.get("inplace", inplace_default)
        if kind == "ReLU":
            return nn.ReLU(inplace=inplace)
        if kind == "ReLU6":
            return nn.ReLU6(inplace=inplace)
        if kind == "SiLU":
            return nn.SiLU(inplace=inplace)
        if kind == "ELU":
            return nn.ELU(alpha=cfg.get("alpha", 1.0), inplace=inplace)
        if kind == "LeakyReLU":
            return nn.LeakyReLU(negative_slope=cfg.get("negative_slope", 0.01),
                                inplace=inplace)
        return nn.RReLU(inplace=inplace)
    if kind == "Sigmoid":
        return nn.Sigmoid()
    if kind == "Tanh":
        return nn.Tanh()
    if kind == "GELU":
        return nn.GELU()
    if kind == "PReLU":
        return nn.PReLU()
    raise KeyError(f"{kind} is not in the model of mmcv's activations")


def build_norm_layer(cfg, num_features, postfix=""):
    """``(name, layer)``: the torch norm ``cfg['type']`` names and its name on the block."""
    kind = cfg["type"]
    eps = cfg.get("eps", 1e-5)
    if kind in ("BN", "BN2d"):
        return "bn" + str(postfix), nn.BatchNorm2d(num_features, eps=eps)
    if kind == "BN1d":
        return "bn" + str(postfix), nn.BatchNorm1d(num_features, eps=eps)
    if kind == "BN3d":
        return "bn" + str(postfix), nn.BatchNorm3d(num_features, eps=eps)
    if kind == "GN":
        return "gn" + str(postfix), nn.GroupNorm(cfg["num_groups"], num_features, eps=eps)
    if kind == "LN":
        return "ln" + str(postfix), nn.LayerNorm(num_features, eps=eps)
    if kind in ("IN", "IN2d"):
        return "in" + str(postfix), nn.InstanceNorm2d(num_features, eps=eps)
    raise KeyError(f"{kind} is not in the model of mmcv's norms")


def build_conv_layer(cfg, *args, **kwargs):
    """The torch convolution ``cfg['type']`` names (``nn.Conv2d`` when ``cfg`` is None)."""
    kind = "Conv2d" if cfg is None else cfg["type"]
    if kind in ("Conv", "Conv2d"):
        return nn.Conv2d(*args, **kwargs)
    if kind == "Conv1d":
        return nn.Conv1d(*args, **kwargs)
    if kind == "Conv3d":
        return nn.Conv3d(*args, **kwargs)
    raise KeyError(f"{kind} is not in the model of mmcv's convolutions")


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias="auto", conv_cfg=None, norm_cfg=None,
                 act_cfg=dict(type="ReLU"), inplace=True, with_spectral_norm=False,
                 padding_mode="zeros", order=("conv", "norm", "act"),
                 efficient_conv_bn_eval=False):
        super().__init__()
        self.conv_cfg = conv_cfg
        self.norm_cfg = norm_cfg
        self.act_cfg = act_cfg
        self.inplace = inplace
        self.order = order
        self.with_norm = norm_cfg is not None
        self.with_activation = act_cfg is not None
        if bias == "auto":
            bias = not self.with_norm
        self.with_bias = bias
        self.conv = build_conv_layer(conv_cfg, in_channels, out_channels, kernel_size,
                                     stride=stride, padding=padding, dilation=dilation,
                                     groups=groups, bias=bias)
        if self.with_norm:
            if order.index("norm") > order.index("conv"):
                norm_channels = out_channels
            else:
                norm_channels = in_channels
            self.norm_name, norm = build_norm_layer(norm_cfg, norm_channels)
            self.add_module(self.norm_name, norm)
        else:
            self.norm_name = None
        if self.with_activation:
            inplace_default = inplace if act_cfg["type"] not in _NOT_INPLACE else False
            self.activate = _build_activation(act_cfg, inplace_default)

    @property
    def norm(self):
        if self.norm_name:
            return getattr(self, self.norm_name)
        return None

    # mmcv loops over ``self.order``, which always names the three layers: spelled out
    def forward(self, x, activate=True, norm=True):
        x = self._run(self.order[0], x, activate, norm)
        x = self._run(self.order[1], x, activate, norm)
        return self._run(self.order[2], x, activate, norm)

    def _run(self, layer, x, activate, norm):
        if layer == "conv":
            return self.conv(x)
        if layer == "norm" and norm and self.with_norm:
            return getattr(self, self.norm_name)(x)  # ``self.norm``, the property
        if layer == "act" and activate and self.with_activation:
            return self.activate(x)
        return x
