"""mmdetection PAFPN after the fix: the bottom-up path adds out of place."""
import torch
import torch.nn.functional as F
from torch import nn


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)
        self.activate = nn.ReLU()

    def forward(self, x):
        return self.activate(self.conv(x))


class FPN(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lateral_convs = nn.ModuleList(ConvModule(c, out_channels, 1) for c in in_channels)
        self.fpn_convs = nn.ModuleList(ConvModule(out_channels, out_channels, 3, padding=1)
                                       for _ in in_channels)


class PAFPN(FPN):
    def __init__(self, in_channels, out_channels):
        super().__init__(in_channels, out_channels)
        levels = len(in_channels)
        self.downsample_convs = nn.ModuleList(
            ConvModule(out_channels, out_channels, 3, stride=2, padding=1)
            for _ in range(levels - 1))
        self.pafpn_convs = nn.ModuleList(
            ConvModule(out_channels, out_channels, 3, padding=1) for _ in range(levels - 1))

    def forward(self, inputs):
        laterals = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=prev_shape)
        inter_outs = [self.fpn_convs[i](laterals[i]) for i in range(used_backbone_levels)]
        for i in range(0, used_backbone_levels - 1):
            inter_outs[i + 1] = inter_outs[i + 1] + self.downsample_convs[i](inter_outs[i])
        outs = [inter_outs[0]]
        outs.extend([self.pafpn_convs[i - 1](inter_outs[i])
                     for i in range(1, used_backbone_levels)])
        return tuple(outs)


torch.manual_seed(0)
neck = PAFPN([4, 8, 16], 8)
inputs = [torch.randn(1, 4, 16, 16), torch.randn(1, 8, 8, 8), torch.randn(1, 16, 4, 4)]
loss = sum(out.mean() for out in neck(inputs))
loss.backward()
