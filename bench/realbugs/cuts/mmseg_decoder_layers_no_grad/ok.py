"""mmsegmentation FCN head, fixed: the decoder layers run with autograd on, as before the no_grad scope was added, so every parameter the optimizer steps (backbone and decode head) gets a gradient and DDP sees no unused parameters. A part meant to stay fixed should be frozen (requires_grad_(False), out of the optimizer), not run under no_grad.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class FCNHead(nn.Module):
    """After mmseg/models/decode_heads/fcn_head.py (0.x), ConvModule written out as conv+bn+relu."""
    def __init__(self, in_channels=8, channels=8, num_convs=2, num_classes=3):
        super().__init__()
        self.convs = nn.Sequential(*[
            nn.Sequential(nn.Conv2d(in_channels if i == 0 else channels, channels, 3, padding=1),
                          nn.BatchNorm2d(channels), nn.ReLU())
            for i in range(num_convs)])
        self.conv_seg = nn.Conv2d(channels, num_classes, kernel_size=1)

    def _forward_feature(self, x):
        feats = self.convs(x)
        return feats

    def forward(self, inputs):
        return self.conv_seg(self._forward_feature(inputs[-1]))

    def forward_train(self, inputs, gt_semantic_seg):
        seg_logits = self.forward(inputs)
        seg_logits = F.interpolate(seg_logits, size=gt_semantic_seg.shape[-2:], mode='bilinear', align_corners=False)
        return {'loss_ce': F.cross_entropy(seg_logits, gt_semantic_seg)}


class EncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.decode_head = FCNHead()

    def forward_train(self, img, gt_semantic_seg):
        x = [self.backbone(img)]
        return self.decode_head.forward_train(x, gt_semantic_seg)


model = EncoderDecoder()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
img, gt = torch.randn(2, 3, 16, 16), torch.randint(0, 3, (2, 16, 16))
losses = model.forward_train(img, gt)
loss = sum(losses.values())
optimizer.zero_grad()
loss.backward()
optimizer.step()
assert all(p.grad is not None for p in model.decode_head.parameters()), "the decode head's conv layers never get a gradient"
assert all(p.grad is not None for p in model.backbone.parameters())
