"""pytorchcv Xception after the maintainer's fix (commit 36209a73): the pre-activation ReLU
of DwsConvBlock is out-of-place, so the unit input that identity_conv saved for backward
stays intact.
"""
import torch
import torch.nn as nn


# pytorchcv/models/common.py and xception.py (imgclsmob, before commit 36209a73, March 2019)
class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, activate=True):
        super(ConvBlock, self).__init__()
        self.activate = activate
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(num_features=out_channels)
        if self.activate:
            self.activ = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.bn(self.conv(x))
        return self.activ(x) if self.activate else x


def conv1x1_block(in_channels, out_channels, stride=1, activate=True):
    return ConvBlock(in_channels, out_channels, 1, stride, 0, activate=activate)


class DwsConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, activate):
        super(DwsConvBlock, self).__init__()
        self.activate = activate
        if self.activate:
            self.activ = nn.ReLU(inplace=False)
        self.dw_conv = nn.Conv2d(in_channels, in_channels, 3, 1, 1, groups=in_channels, bias=False)
        self.pw_conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(num_features=out_channels)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)
        return self.bn(self.pw_conv(self.dw_conv(x)))


class XceptionUnit(nn.Module):
    def __init__(self, in_channels, out_channels, stride, reps, start_with_relu=True):
        super(XceptionUnit, self).__init__()
        self.resize_identity = (in_channels != out_channels) or (stride != 1)
        if self.resize_identity:
            self.identity_conv = conv1x1_block(in_channels, out_channels, stride=stride, activate=False)
        self.body = nn.Sequential()
        for i in range(reps):
            in_channels_i = in_channels if i == 0 else out_channels
            activate = start_with_relu if (i == 0) else True
            self.body.add_module("block{}".format(i + 1), DwsConvBlock(in_channels_i, out_channels, activate))
        if stride != 1:
            self.body.add_module("pool", nn.MaxPool2d(kernel_size=3, stride=stride, padding=1))

    def forward(self, x):
        identity = self.identity_conv(x) if self.resize_identity else x.clone()
        x = self.body(x)
        x = x + identity
        return x


torch.manual_seed(0)
# entry flow of xception: units 64->128 (no leading ReLU) and 128->256, then a classifier
features = nn.Sequential(XceptionUnit(64, 128, stride=2, reps=2, start_with_relu=False),
                         XceptionUnit(128, 256, stride=2, reps=2, start_with_relu=True))
model = nn.Sequential(features, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
input, target = torch.randn(2, 64, 16, 16), torch.tensor([1, 7])
loss = criterion(model(input), target)
optimizer.zero_grad()
loss.backward()
optimizer.step()
