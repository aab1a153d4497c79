"""pytorchcv SqueezeNext: SqnxtUnit runs its in-place ReLU on the identity branch, which is
already the output of a ReLU (the previous unit's, or identity_conv's); the stacked in-place
ReLU overwrites a result that the first ReLU saved for backward.

Source: https://github.com/osmr/imgclsmob/issues/5
Shape: libraries
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn


# pytorchcv/models/squeezenext.py (imgclsmob, October 2018)
class SqnxtConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding=(0, 0)):
        super(SqnxtConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)
        self.bn = nn.BatchNorm2d(num_features=out_channels)
        self.activ = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.activ(self.bn(self.conv(x)))


class SqnxtUnit(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super(SqnxtUnit, self).__init__()
        if stride == 2:
            reduction_den, self.resize_identity = 1, True
        elif in_channels > out_channels:
            reduction_den, self.resize_identity = 4, True
        else:
            reduction_den, self.resize_identity = 2, False
        mid = in_channels // reduction_den
        self.conv1 = SqnxtConv(in_channels, mid, 1, stride)
        self.conv2 = SqnxtConv(mid, mid // 2, 1, 1)
        self.conv3 = SqnxtConv(mid // 2, mid, (1, 3), 1, padding=(0, 1))
        self.conv4 = SqnxtConv(mid, mid, (3, 1), 1, padding=(1, 0))
        self.conv5 = SqnxtConv(mid, out_channels, 1, 1)
        if self.resize_identity:
            self.identity_conv = SqnxtConv(in_channels, out_channels, 1, stride)
        self.activ = nn.ReLU(inplace=True)  # culprit: GG201

    def forward(self, x):
        if self.resize_identity:
            identity = self.identity_conv(x)
        else:
            identity = x
        identity = self.activ(identity)  # culprit: GG201
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.conv3(x)
        x = self.conv4(x)
        x = self.conv5(x)
        x = x + identity
        x = self.activ(x)
        return x


torch.manual_seed(0)
# first stage of sqnxt23_w1: init block gives 64 channels, units 64->32 and 32->32
stage1 = nn.Sequential(SqnxtUnit(64, 32, stride=1), SqnxtUnit(32, 32, stride=1))
net = nn.Sequential(stage1, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
x = torch.randn(2, 64, 14, 14)
y = net(x)
y.sum().backward()
