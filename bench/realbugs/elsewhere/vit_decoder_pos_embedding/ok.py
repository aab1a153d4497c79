"""The issue's fix: the position embedding is added out of place."""
import torch
from torch import nn


class Transformer(nn.Module):
    def __init__(self, dim, depth, mlp_dim):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp_dim), nn.GELU(),
                          nn.Linear(mlp_dim, dim))
            for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class ViTDecoder(nn.Module):
    def __init__(self, num_patches, dim, depth, mlp_dim, channels=3):
        super().__init__()
        self.transformer = Transformer(dim, depth, mlp_dim)
        self.de_pos_embedding = nn.Parameter(torch.randn(1, num_patches, dim), requires_grad=False)
        self.norm = nn.LayerNorm(dim)
        self.to_pixel = nn.Linear(dim, channels)

    def forward(self, token):
        token = token + self.de_pos_embedding
        x = self.transformer(token)
        x = self.norm(x)
        return self.to_pixel(x)


class Quantizer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


torch.manual_seed(0)
quantizer = Quantizer(8)
decoder_a = ViTDecoder(num_patches=4, dim=8, depth=1, mlp_dim=16)
decoder_b = ViTDecoder(num_patches=4, dim=8, depth=1, mlp_dim=16, channels=1)
quant = quantizer(torch.randn(2, 4, 8))
rec_a = decoder_a(quant)
rec_b = decoder_b(quant)
(rec_a.pow(2).mean() + rec_b.pow(2).mean()).backward()
