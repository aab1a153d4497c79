"""pytorch-frame's HashTextEmbedder returns embedding(idx) with its graph; the dataset
materializes the text column once through it, and every training step's loss
backpropagates into that stored graph, which the first step's backward freed.

Source: https://github.com/pyg-team/pytorch-frame/pull/229
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn.functional as F
from torch import Tensor


class HashTextEmbedder:
    def __init__(self, out_channels: int, num_hash_bins: int = 64, device=None):
        self.out_channels, self.num_hash_bins, self.device = out_channels, num_hash_bins, device
        self.embedding = torch.nn.Embedding(num_hash_bins, out_channels)

    def __call__(self, sentences) -> Tensor:
        idx = torch.tensor([sum(map(ord, s)) % self.num_hash_bins for s in sentences], device=self.device)
        return self.embedding(idx)  # culprit: -


class Dataset:
    def __init__(self, df, col_to_text_embedder):
        self.df, self.col_to_text_embedder = df, col_to_text_embedder
        self.tensor_frame = None

    def materialize(self):
        feats = [torch.tensor(self.df["num"]).unsqueeze(1)]
        for col, embedder in self.col_to_text_embedder.items():
            feats.append(embedder(self.df[col]))
        self.tensor_frame = torch.cat(feats, dim=1)
        return self


class Model(torch.nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, 2)

    def forward(self, x):
        return self.lin(x)


torch.manual_seed(0)
df = {"num": [0.1, 0.5, -0.3, 1.2], "text": ["a cat", "a dog", "the bird", "fish"], "y": [0, 1, 0, 1]}
dataset = Dataset(df, {"text": HashTextEmbedder(out_channels=4)}).materialize()
model = Model(5)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
y = torch.tensor(df["y"])
for epoch in range(2):
    for index in [torch.tensor([0, 1]), torch.tensor([2, 3])]:
        tf = dataset.tensor_frame[index]
        loss = F.cross_entropy(model(tf), y[index])
        optimizer.zero_grad()
        loss.backward()  # culprit: GG207
        optimizer.step()
