"""The PR's fix: the top-down sum is out of place."""
import torch
import torch.nn.functional as F
from torch import nn

activations = {
    "ReLU": nn.ReLU,
    "LeakyReLU": lambda: nn.LeakyReLU(negative_slope=0.1, inplace=True),
}


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, activation=None):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.act = activations[activation]() if activation is not None else None

    def forward(self, x):
        x = self.conv(x)
        if self.act is not None:
            x = self.act(x)
        return x


class FPN(nn.Module):
    def __init__(self, in_channels, out_channels, activation=None):
        super().__init__()
        self.lateral_convs = nn.ModuleList(
            ConvModule(c, out_channels, 1, activation=activation) for c in in_channels)

    def forward(self, inputs):
        laterals = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(
                laterals[i], scale_factor=2, mode="bilinear")
        outs = [laterals[i] for i in range(used_backbone_levels)]
        return tuple(outs)


cfg = dict(name="FPN", in_channels=[4, 8, 16], out_channels=8, activation="LeakyReLU")
torch.manual_seed(0)
fpn = FPN(cfg["in_channels"], cfg["out_channels"], activation=cfg["activation"])
inputs = [torch.randn(1, 4, 16, 16), torch.randn(1, 8, 8, 8), torch.randn(1, 16, 4, 4)]
sum(out.mean() for out in fpn(inputs)).backward()
