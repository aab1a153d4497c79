"""PANet's FPEM_FFM neck as fixed in mmocr: later FPEM outputs are added out of place
(`c2_ffm = c2_ffm + c2`), leaving the saved ReLU results alone.
"""
import torch
import torch.nn.functional as F
from torch import nn


class SeparableConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.depthwise_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, stride=stride,
                                        groups=in_channels)
        self.pointwise_conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.pointwise_conv(self.depthwise_conv(x))))


class FPEM(nn.Module):
    def __init__(self, in_channels=8):
        super().__init__()
        self.up_add1, self.up_add2 = SeparableConv2d(in_channels, in_channels), SeparableConv2d(in_channels, in_channels)
        self.down_add1 = SeparableConv2d(in_channels, in_channels, 2)

    def forward(self, c2, c3, c4):
        c3 = self.up_add1(self._upsample_add(c4, c3))
        c2 = self.up_add2(self._upsample_add(c3, c2))
        c3 = self.down_add1(self._upsample_add(c3, c2))
        return c2, c3, c4

    def _upsample_add(self, x, y):
        return F.interpolate(x, size=y.size()[2:]) + y


class FPEM_FFM(nn.Module):
    def __init__(self, conv_out=8, fpem_repeat=2):
        super().__init__()
        self.fpems = nn.ModuleList(FPEM(conv_out) for _ in range(fpem_repeat))

    def forward(self, x):
        c2, c3, c4 = x
        for i, fpem in enumerate(self.fpems):
            c2, c3, c4 = fpem(c2, c3, c4)
            if i == 0:
                c2_ffm = c2
                c3_ffm = c3
            else:
                c2_ffm = c2_ffm + c2
                c3_ffm = c3_ffm + c3
        c3 = F.interpolate(c3_ffm, c2_ffm.size()[-2:], mode='bilinear', align_corners=False)
        return c2_ffm, c3


torch.manual_seed(0)
neck = FPEM_FFM()
feats = [torch.randn(2, 8, s, s, requires_grad=True) for s in (8, 4, 2)]
outs = neck(feats)
sum(o.sum() for o in outs).backward()
