"""mmdetection FusedSemanticHead: lateral features summed into a ReLU output in place.

Source: https://github.com/open-mmlab/mmdetection/issues/7933
Shape: collections
Symptom: modified by an inplace operation
"""
import torch
import torch.nn.functional as F
from torch import nn


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.activate = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.activate(self.conv(x))


class FusedSemanticHead(nn.Module):
    def __init__(self, num_ins=3, fusion_level=1, num_convs=2, in_channels=8,
                 conv_out_channels=8, num_classes=5):
        super().__init__()
        self.num_ins = num_ins
        self.fusion_level = fusion_level
        self.num_convs = num_convs
        self.lateral_convs = nn.ModuleList(
            ConvModule(in_channels, in_channels, 1) for _ in range(self.num_ins))
        self.convs = nn.ModuleList(
            ConvModule(in_channels if i == 0 else conv_out_channels, conv_out_channels, 3,
                       padding=1)
            for i in range(self.num_convs))
        self.conv_logits = nn.Conv2d(conv_out_channels, num_classes, 1)

    def forward(self, feats):
        x = self.lateral_convs[self.fusion_level](feats[self.fusion_level])
        fused_size = tuple(x.shape[-2:])
        for i, feat in enumerate(feats):
            if i != self.fusion_level:
                feat = F.interpolate(feat, size=fused_size, mode="bilinear", align_corners=True)
                x += self.lateral_convs[i](feat)  # culprit: GG201
        for i in range(self.num_convs):
            x = self.convs[i](x)
        return self.conv_logits(x)


torch.manual_seed(0)
head = FusedSemanticHead()
feats = [torch.randn(2, 8, 16, 16), torch.randn(2, 8, 8, 8), torch.randn(2, 8, 4, 4)]
labels = torch.randint(0, 5, (2, 8, 8))
loss = F.cross_entropy(head(feats), labels)
loss.backward()
