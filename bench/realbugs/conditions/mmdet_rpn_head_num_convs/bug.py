"""mmdetection RPNHead: with num_convs > 1 the conv stack ends in a ReLU, then an in-place ReLU.

Source: https://github.com/open-mmlab/mmdetection/issues/7933
Shape: conditions
Symptom: modified by an inplace operation
"""
import torch
from torch import nn
import torch.nn.functional as F


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.activate = nn.ReLU()

    def forward(self, x):
        return self.activate(self.conv(x))


class RPNHead(nn.Module):
    def __init__(self, in_channels=4, feat_channels=8, num_anchors=3, num_convs=1):
        super().__init__()
        self.in_channels, self.feat_channels, self.num_convs = in_channels, feat_channels, num_convs
        self._init_layers(num_anchors)

    def _init_layers(self, num_anchors):
        if self.num_convs > 1:
            rpn_convs = []
            for i in range(self.num_convs):
                in_channels = self.in_channels if i == 0 else self.feat_channels
                rpn_convs.append(ConvModule(in_channels, self.feat_channels, 3, padding=1))
            self.rpn_conv = nn.Sequential(*rpn_convs)
        else:
            self.rpn_conv = nn.Conv2d(self.in_channels, self.feat_channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(self.feat_channels, num_anchors, 1)
        self.rpn_reg = nn.Conv2d(self.feat_channels, num_anchors * 4, 1)

    def forward_single(self, x):
        x = self.rpn_conv(x)
        x = F.relu(x, inplace=True)  # culprit: GG201
        rpn_cls_score = self.rpn_cls(x)
        rpn_bbox_pred = self.rpn_reg(x)
        return rpn_cls_score, rpn_bbox_pred

    def forward(self, feats):
        return [self.forward_single(feat) for feat in feats]


torch.manual_seed(0)
head = RPNHead(num_convs=2)
feats = [torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)]
loss = sum(cls.sigmoid().mean() + reg.abs().mean() for cls, reg in head(feats))
loss.backward()
