"""Descript Audio Codec: copy.deepcopy of a DAC model fails on its weight_norm convs

Every conv in DAC is built by WNConv1d / WNConvTranspose1d, which wrap the layer in
the hook-based torch.nn.utils.weight_norm. That keeps `weight` on each conv as a
tensor computed from weight_g and weight_v (a non-leaf), so deep-copying the model,
here to keep a frozen teacher for fine-tuning, hits a tensor that is not a graph leaf.

Source: https://github.com/descriptinc/descript-audio-codec/issues/81
Shape: libraries
Symptom: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
"""
import copy
import math
import torch
import torch.nn as nn
from torch.nn.utils import weight_norm

# --- dac/nn/layers.py (descript-audio-codec 1.0.0), written out: the package is not installed
def WNConv1d(*args, **kwargs):
    return weight_norm(nn.Conv1d(*args, **kwargs))  # culprit: -

def WNConvTranspose1d(*args, **kwargs):
    return weight_norm(nn.ConvTranspose1d(*args, **kwargs))  # culprit: -

def snake(x, alpha):  # @torch.jit.script left off
    shape = x.shape
    x = x.reshape(shape[0], shape[1], -1)
    x = x + (alpha + 1e-9).reciprocal() * torch.sin(alpha * x).pow(2)
    return x.reshape(shape)

class Snake1d(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x):
        return snake(x, self.alpha)

# --- dac/model/dac.py (1.0.0), reduced: one encoder and one decoder stage, no quantizer
class ResidualUnit(nn.Module):
    def __init__(self, dim: int = 16, dilation: int = 1):
        super().__init__()
        pad = ((7 - 1) * dilation) // 2
        self.block = nn.Sequential(
            Snake1d(dim), WNConv1d(dim, dim, kernel_size=7, dilation=dilation, padding=pad),
            Snake1d(dim), WNConv1d(dim, dim, kernel_size=1),
        )

    def forward(self, x):
        y = self.block(x)
        pad = (x.shape[-1] - y.shape[-1]) // 2
        x = x[..., pad:-pad] if pad > 0 else x
        return x + y

class DAC(nn.Module):
    def __init__(self, d_model=8, stride=2, d_latent=8):
        super().__init__()
        pad = math.ceil(stride / 2)
        self.encoder = nn.Sequential(
            WNConv1d(1, d_model, kernel_size=7, padding=3), ResidualUnit(d_model, dilation=1),
            Snake1d(d_model), WNConv1d(d_model, d_latent, kernel_size=2 * stride, stride=stride, padding=pad))
        self.decoder = nn.Sequential(
            Snake1d(d_latent), WNConvTranspose1d(d_latent, d_model, kernel_size=2 * stride, stride=stride, padding=pad),
            Snake1d(d_model), WNConv1d(d_model, 1, kernel_size=7, padding=3), nn.Tanh())

    def forward(self, audio_data):
        return self.decoder(self.encoder(audio_data))

torch.manual_seed(0)
model = DAC()
audio = torch.randn(2, 1, 64)
teacher = copy.deepcopy(model).eval()  # culprit: GG105
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
for step in range(2):
    with torch.no_grad():
        target = teacher(audio)
    recon = model(audio)
    loss = (recon - target).abs().mean() + (recon - audio).abs().mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"step {step} loss {loss.item():.4f}")
