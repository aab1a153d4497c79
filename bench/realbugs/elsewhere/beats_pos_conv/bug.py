"""BEATs TransformerEncoder adds the positional convolution into its input in place.

The convolution saved a transposed view of that input.

Source: https://github.com/microsoft/unilm/pull/999
Shape: elsewhere
Symptom: modified by an inplace operation
"""
import torch
from torch import nn


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.num_pad = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        return x[:, :, :-self.num_pad] if self.num_pad > 0 else x


class TransformerEncoder(nn.Module):
    def __init__(self, embed_dim=8, conv_pos=4, conv_pos_groups=2, layer_norm_first=False):
        super().__init__()
        self.pos_conv = nn.Sequential(
            nn.Conv1d(embed_dim, embed_dim, kernel_size=conv_pos, padding=conv_pos // 2,
                      groups=conv_pos_groups),
            SamePad(conv_pos), nn.GELU())
        self.layer_norm_first = layer_norm_first
        self.layer_norm = nn.LayerNorm(embed_dim)
        self.layers = nn.ModuleList(nn.Linear(embed_dim, embed_dim) for _ in range(2))

    def forward(self, x, padding_mask=None):
        return self.extract_features(x, padding_mask)

    def extract_features(self, x, padding_mask=None):
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv  # culprit: GG201
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        for layer in self.layers:
            x = x + torch.relu(layer(x))
        return x


class BEATs(nn.Module):
    def __init__(self, embed_dim=8):
        super().__init__()
        self.post_extract_proj = nn.Linear(6, embed_dim)
        self.encoder = TransformerEncoder(embed_dim)

    def forward(self, features):
        return self.encoder(self.post_extract_proj(features))


torch.manual_seed(0)
model = BEATs()
model(torch.randn(2, 10, 6)).pow(2).mean().backward()
