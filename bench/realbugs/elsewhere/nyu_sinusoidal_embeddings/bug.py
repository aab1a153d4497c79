"""Sinusoidal position table written into an nn.Embedding weight handed to a helper.

Source: https://github.com/Atcold/NYU-DLSP20/issues/765
Shape: elsewhere
Symptom: a view of a leaf Variable that requires grad is being used in an in-place operation
"""
import numpy as np
import torch
from torch import nn


def create_sinusoidal_embeddings(nb_p, dim, E):
    theta = np.array([
        [p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
        for p in range(nb_p)
    ])
    E[:, 0::2] = torch.FloatTensor(np.sin(theta[:, 0::2]))  # culprit: GG102
    E[:, 1::2] = torch.FloatTensor(np.cos(theta[:, 1::2]))  # culprit: GG102
    E.requires_grad = False
    E = E.to(device)


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size, max_position_embeddings, p):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.position_embeddings = nn.Embedding(max_position_embeddings, d_model)
        create_sinusoidal_embeddings(nb_p=max_position_embeddings, dim=d_model,
                                     E=self.position_embeddings.weight)
        self.LayerNorm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0).expand_as(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


device = torch.device("cpu")
torch.manual_seed(0)
embeddings = Embeddings(d_model=8, vocab_size=50, max_position_embeddings=16, p=0.1)
embeddings(torch.randint(0, 50, (2, 10))).sum().backward()
