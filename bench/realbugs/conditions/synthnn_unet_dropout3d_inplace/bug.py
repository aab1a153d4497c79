"""synthnn's 3D U-net: every conv block ends with Dropout3d(dropout_p, inplace=True)
after its activation; with dropout_p > 0 the dropout overwrites the ReLU output that
the ReLU saved for backward.

Source: https://github.com/jcreinhold/synthtorch/issues/1
Shape: conditions
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
from torch import nn
from torch.nn import functional as F


class Unet(torch.nn.Module):
    def __init__(self, n_layers: int, kernel_size: int = 3, dropout_p: float = 0, channel_base_power: int = 1):
        super().__init__()
        self.n_layers, self.kernel_sz, self.dropout_p = n_layers, kernel_size, dropout_p
        def lc(n): return int(2 ** (channel_base_power + n))  # shortcut to layer count
        self.start = self._dbl_conv_act(1, lc(0), lc(1))
        self.down_layers = nn.ModuleList([self._dbl_conv_act(lc(n), lc(n), lc(n + 1)) for n in range(1, n_layers)])
        self.bridge = self._dbl_conv_act(lc(n_layers), lc(n_layers), lc(n_layers + 1))
        self.finish = nn.Sequential(self._conv_act(lc(2) + lc(1), lc(1)), nn.Conv3d(lc(1), 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.start(x)
        dout = [x]
        x = F.max_pool3d(dout[-1], (2, 2, 2))
        for dl in self.down_layers:
            dout.append(dl(x))
            x = F.max_pool3d(dout[-1], (2, 2, 2))
        x = F.interpolate(self.bridge(x), size=dout[-1].shape[2:])
        return self.finish(torch.cat((x, dout[0]), dim=1))

    def _conv_act(self, in_c: int, out_c: int) -> nn.Sequential:
        return nn.Sequential(
            nn.ReplicationPad3d(self.kernel_sz // 2),
            nn.Conv3d(in_c, out_c, self.kernel_sz),
            nn.InstanceNorm3d(out_c, affine=True),
            nn.ReLU(),
            nn.Dropout3d(self.dropout_p, inplace=True))  # culprit: GG201

    def _dbl_conv_act(self, in_c: int, mid_c: int, out_c: int) -> nn.Sequential:
        return nn.Sequential(self._conv_act(in_c, mid_c), self._conv_act(mid_c, out_c))


torch.manual_seed(0)
model = Unet(n_layers=1, dropout_p=0.2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
src, tgt = torch.randn(2, 1, 4, 4, 4), torch.randn(2, 1, 4, 4, 4)
model.train()
loss = F.mse_loss(model(src), tgt)
optimizer.zero_grad()
loss.backward()
optimizer.step()
