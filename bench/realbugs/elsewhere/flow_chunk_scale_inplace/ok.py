"""The flow's channels scaled out of place, as the thread ends up doing: `u = u_scale * u`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def resize_flow(flow, size):
    _, _, h, w = flow.shape
    u_scale, v_scale = size[1] / w, size[0] / h
    flow = F.interpolate(flow, size=size, mode='bilinear', align_corners=False)
    u, v = flow.chunk(2, dim=1)
    u = u_scale * u
    v = v_scale * v
    return torch.cat([u, v], dim=1)


class FlowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 2, 3, padding=1)

    def forward(self, im1, im2):
        return self.conv(torch.cat([im1, im2], dim=1))


torch.manual_seed(0)
net = FlowNet()
im1, im2 = torch.rand(1, 3, 4, 4), torch.rand(1, 3, 4, 4)
target = torch.randn(1, 2, 8, 8)
flow = resize_flow(net(im1, im2), size=(8, 8))
loss = (flow - target).abs().mean()
loss.backward()
