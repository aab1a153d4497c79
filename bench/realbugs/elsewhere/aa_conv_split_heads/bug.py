"""Attention-augmented conv scales q in place; q is a reshape of one output of split.

Source: https://github.com/leaderj1001/Attention-Augmented-Conv2d/issues/31
Shape: elsewhere
Symptom: is a view and is being modified inplace
"""
import torch
import torch.nn.functional as F
from torch import nn


class AugmentedConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dk, dv, Nh):
        super().__init__()
        self.dk, self.dv, self.Nh = dk, dv, Nh
        self.conv_out = nn.Conv2d(in_channels, out_channels - dv, kernel_size, padding=1)
        self.qkv_conv = nn.Conv2d(in_channels, 2 * dk + dv, kernel_size=1)
        self.attn_out = nn.Conv2d(dv, dv, 1)

    def forward(self, x):
        batch, _, height, width = x.size()
        conv_out = self.conv_out(x)
        flat_q, flat_k, flat_v, q, k, v = self.compute_flat_qkv(x, self.dk, self.dv, self.Nh)
        logits = torch.matmul(flat_q.transpose(2, 3), flat_k)
        weights = F.softmax(logits, dim=-1)
        attn_out = torch.matmul(weights, flat_v.transpose(2, 3))
        attn_out = torch.reshape(attn_out, (batch, self.Nh, self.dv // self.Nh, height, width))
        attn_out = self.attn_out(self.combine_heads_2d(attn_out))
        return torch.cat((conv_out, attn_out), dim=1)

    def compute_flat_qkv(self, x, dk, dv, Nh):
        N, _, H, W = x.size()
        qkv = self.qkv_conv(x)
        q, k, v = torch.split(qkv, [dk, dk, dv], dim=1)
        q = self.split_heads_2d(q, Nh)
        k = self.split_heads_2d(k, Nh)
        v = self.split_heads_2d(v, Nh)
        dkh = dk // Nh
        q *= dkh ** -0.5  # culprit: GG203
        flat_q = torch.reshape(q, (N, Nh, dk // Nh, H * W))
        flat_k = torch.reshape(k, (N, Nh, dk // Nh, H * W))
        flat_v = torch.reshape(v, (N, Nh, dv // Nh, H * W))
        return flat_q, flat_k, flat_v, q, k, v

    def split_heads_2d(self, x, Nh):
        batch, channels, height, width = x.size()
        return torch.reshape(x, (batch, Nh, channels // Nh, height, width))

    def combine_heads_2d(self, x):
        batch, Nh, dv, H, W = x.size()
        return torch.reshape(x, (batch, Nh * dv, H, W))


torch.manual_seed(0)
conv = AugmentedConv(in_channels=3, out_channels=8, kernel_size=3, dk=8, dv=4, Nh=2)
conv(torch.randn(2, 3, 6, 6)).sum().backward()
