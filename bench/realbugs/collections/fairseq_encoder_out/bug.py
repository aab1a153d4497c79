"""fairseq decoder: rewriting encoder_out[0][:, :, j] step by step at decode time.

Source: https://github.com/facebookresearch/fairseq/issues/251
Shape: collections
Symptom: modified by an inplace operation
"""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab=20, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, src_tokens):
        x = torch.tanh(self.proj(self.embed(src_tokens)))
        return x, src_tokens.eq(0)


class Decoder(nn.Module):
    def __init__(self, dim=6, vocab=20):
        super().__init__()
        self.out = nn.Linear(dim, vocab)

    def do_something(self, column):
        return column * 0.5

    def forward(self, encoder_out):
        for j in range(encoder_out[0].size(2)):
            encoder_out[0][:, :, j] = self.do_something(encoder_out[0][:, :, j])  # culprit: GG201
        return self.out(encoder_out[0])


torch.manual_seed(0)
encoder, decoder = Encoder(), Decoder()
src = torch.randint(1, 20, (2, 5))
logits = decoder(encoder(src))
logits.logsumexp(-1).sum().backward()
