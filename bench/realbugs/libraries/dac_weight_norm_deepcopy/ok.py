"""Descript Audio Codec with parametrizations.weight_norm: the model deep-copies

Right because WNConv1d / WNConvTranspose1d use torch.nn.utils.parametrizations.weight_norm
(the reporter's fix), which keeps only leaf tensors on each conv (original0/original1)
and recomputes the weight on access, so copy.deepcopy of the model for the frozen
teacher meets no computed, non-leaf tensor.
"""
import copy
import math
import torch
import torch.nn as nn
from torch.nn.utils.parametrizations import weight_norm

# --- dac/nn/layers.py (descript-audio-codec 1.0.0), written out: the package is not installed
def WNConv1d(*args, **kwargs):
    return weight_norm(nn.Conv1d(*args, **kwargs))

def WNConvTranspose1d(*args, **kwargs):
    return weight_norm(nn.ConvTranspose1d(*args, **kwargs))

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
teacher = copy.deepcopy(model).eval()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
for step in range(2):
    with torch.no_grad():
        target = teacher(audio)
    recon = model(audio)
    loss = (recon - target).abs().mean() + (recon - audio).abs().mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"step {step} loss {loss.item():.4f}")
