"""The issue's fix: out = x.clone(), so the quarters are written into a copy."""
import torch
from torch import nn


class DRB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.conv = nn.Conv2d(n_feats, n_feats, 3, padding=1)

    def forward(self, x):
        return x + self.conv(x)


class CSB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.conv1 = nn.Conv2d(n_feats * 4, n_feats * 4, kernel_size=1, padding=0, bias=False)

    def forward(self, x):
        h, w = x.size(2) // 2, x.size(3) // 2
        f1 = x[:, :, 0:h, 0:w]
        f2 = x[:, :, h:, 0:w]
        f3 = x[:, :, 0:h, w:]
        f4 = x[:, :, h:, w:]
        f_all = self.conv1(torch.cat([f1, f2, f3, f4], 1))
        c = f_all.size(1)
        out = x.clone()
        out[:, :, 0:h, 0:w] = f_all[:, 0:c // 4, :, :]
        out[:, :, h:, 0:w] = f_all[:, c // 4:c // 2, :, :]
        out[:, :, 0:h, w:] = f_all[:, c // 2:c * 3 // 4, :, :]
        out[:, :, h:, w:] = f_all[:, c * 3 // 4:, :, :]
        return out


class MCAB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.drb = DRB(n_feats)
        self.csb = CSB(n_feats)
        self.conv3 = nn.Conv2d(n_feats, n_feats, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        down_b = self.drb(x)
        top_b = self.csb(x)
        top_b = torch.sigmoid(self.conv3(top_b))
        return down_b * top_b


class TSAN(nn.Module):
    def __init__(self, n_colors=3, n_feats=4):
        super().__init__()
        self.first_conv = nn.Conv2d(n_colors, n_feats, 1)
        self.relu = nn.ReLU(inplace=True)
        self.body1 = MCAB(n_feats)
        self.output = nn.Conv2d(n_feats, n_colors, 1)

    def forward(self, x):
        first_out = self.relu(self.first_conv(x))
        return self.output(self.body1(first_out))


torch.manual_seed(0)
model = TSAN()
model(torch.randn(1, 3, 8, 8)).abs().mean().backward()
