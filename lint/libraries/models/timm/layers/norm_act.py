"""``timm/layers/norm_act.py`` (timm 1.0): ``BatchNormAct2d``, batch norm then its
activation (built with ``inplace=True`` by default); the running statistics' bookkeeping
of its forward is ``F.batch_norm``'s here."""

import torch.nn.functional as F
from torch import nn

from timm.layers.create_act import create_act_layer


def _create_act(act_layer, act_kwargs=None, inplace=False, apply_act=True):
    if not apply_act:
        return nn.Identity()
    inplace = inplace if act_kwargs is None else act_kwargs.get("inplace", inplace)
    act = create_act_layer(act_layer, inplace=inplace)
    return nn.Identity() if act is None else act


class BatchNormAct2d(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, apply_act=True, act_layer=nn.ReLU, act_kwargs=None,
                 inplace=True, drop_layer=None, device=None, dtype=None):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats)
        self.drop = drop_layer() if drop_layer is not None else nn.Identity()
        self.act = _create_act(act_layer, act_kwargs=act_kwargs, inplace=inplace,
                               apply_act=apply_act)

    def forward(self, x):
        x = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         self.training or self.running_mean is None, self.momentum, self.eps)
        x = self.drop(x)
        x = self.act(x)
        return x
