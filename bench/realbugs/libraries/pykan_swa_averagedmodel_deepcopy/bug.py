"""SWA on a pykan MultKAN: AveragedModel deep-copies the model after training has started, but every
forward with save_act leaves graph-attached activation scales (edge_actscale, acts_scale_spline) on it.

Source: https://github.com/KindXiaoming/pykan/issues/443
Shape: libraries
Symptom: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.swa_utils import AveragedModel


class KANLayer(nn.Module):  # kan/KANLayer.py, pykan 0.2.x (B-spline basis replaced by Gaussian bumps)
    def __init__(self, in_dim, out_dim, num=5):
        super().__init__()
        self.register_buffer("grid", torch.linspace(-1, 1, num))
        self.coef = nn.Parameter(0.1 * torch.randn(in_dim, out_dim, num))
        self.scale_base = nn.Parameter(torch.ones(in_dim, out_dim))
        self.scale_sp = nn.Parameter(torch.ones(in_dim, out_dim))

    def forward(self, x):
        preacts = x[:, None, :].expand(-1, self.coef.shape[1], -1)
        spline = torch.einsum("bik,iok->bio", torch.exp(-(x[..., None] - self.grid) ** 2 / 0.1), self.coef)
        y = self.scale_base[None] * F.silu(x)[:, :, None] + self.scale_sp[None] * spline
        postspline, postacts = spline.permute(0, 2, 1), y.permute(0, 2, 1)
        return y.sum(1), preacts, postacts, postspline


class MultKAN(nn.Module):  # kan/MultKAN.py forward (save_act=True) and reg, pykan 0.2.x
    def __init__(self, width):
        super().__init__()
        self.act_fun = nn.ModuleList(KANLayer(i, o) for i, o in zip(width[:-1], width[1:]))
        self.save_act = True

    def forward(self, x):
        self.acts, self.acts_scale, self.acts_scale_spline, self.edge_actscale = [x.detach()], [], [], []
        for layer in self.act_fun:
            x, preacts, postacts_numerical, postspline = layer(x)
            if self.save_act:
                input_range = torch.std(preacts, dim=0) + 0.1
                output_range_spline = torch.std(postacts_numerical, dim=0)
                output_range = torch.std(postacts_numerical, dim=0)
                self.edge_actscale.append(output_range)
                self.acts_scale.append((output_range / input_range).detach())
                self.acts_scale_spline.append(output_range_spline / input_range)
            self.acts.append(x.detach())
        return x

    def reg(self, lamb_l1=1.0, lamb_entropy=2.0):  # reg_metric='edge_forward_n'
        reg_ = 0.0
        for vec in self.acts_scale_spline:
            p_row = vec / (torch.sum(vec, dim=1, keepdim=True) + 1)
            reg_ = reg_ + lamb_l1 * vec.sum() - lamb_entropy * torch.mean(torch.sum(p_row * torch.log2(p_row + 1e-4), dim=1))
        return reg_


torch.manual_seed(0)
x = torch.rand(64, 2) * 2 - 1
y = torch.sin(torch.pi * x[:, :1]) + x[:, 1:] ** 2
model = MultKAN(width=[2, 5, 1])
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
swa_start, swa_model = 20, None
for step in range(30):
    loss = F.mse_loss(model(x), y) + 1e-3 * model.reg()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step >= swa_start:
        if swa_model is None:
            swa_model = AveragedModel(model)  # culprit: -
        swa_model.update_parameters(model)
print(F.mse_loss(swa_model(x), y).item())
