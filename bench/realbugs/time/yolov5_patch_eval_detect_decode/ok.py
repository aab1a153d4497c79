"""The patch trained through YOLOv5's updated Detect: the inference branch decodes the boxes
out of place (xy, wh and the rest concatenated), so the sigmoid output it saved is never
written.
"""
import torch
import torch.nn as nn


class Detect(nn.Module):
    stride = None

    def __init__(self, nc=2, anchors=((10, 13, 16, 30, 33, 23),), ch=(8,)):
        super().__init__()
        self.nc, self.no = nc, nc + 5
        self.nl, self.na = len(anchors), len(anchors[0]) // 2
        self.grid = [torch.zeros(1)] * self.nl
        a = torch.tensor(anchors).float().view(self.nl, -1, 2)
        self.register_buffer('anchor_grid', a.clone().view(self.nl, 1, -1, 1, 1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                if self.grid[i].shape[2:4] != x[i].shape[2:4]:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                y = x[i].sigmoid()
                xy = (y[..., 0:2] * 2. - 0.5 + self.grid[i].to(x[i].device)) * self.stride[i]
                wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i]
                y = torch.cat((xy, wh, y[..., 4:]), -1)
                z.append(y.view(bs, -1, self.no))
        return x if self.training else (torch.cat(z, 1), x)

    @staticmethod
    def _make_grid(nx=20, ny=20):
        yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing='ij')
        return torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.SiLU())
        self.detect = Detect()
        self.detect.stride = torch.tensor([2.])

    def forward(self, x):
        return self.detect([self.backbone(x)])


class PatchTrainer:
    def __init__(self):
        self.yolov5 = Model().eval()
        for p in self.yolov5.parameters():
            p.requires_grad_(False)
        self.adv_patch = torch.full((3, 4, 4), 0.5, requires_grad=True)
        self.optimizer = torch.optim.Adam([self.adv_patch], lr=0.03)

    def train(self, images):
        for batch in images:
            patched = batch.clone()
            patched[:, :, 2:6, 2:6] = self.adv_patch
            output = self.yolov5(patched)[0]
            loss = output[..., 4].max()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            with torch.no_grad():
                self.adv_patch.clamp_(0, 1)


torch.manual_seed(0)
PatchTrainer().train([torch.rand(2, 3, 8, 8) for _ in range(2)])
