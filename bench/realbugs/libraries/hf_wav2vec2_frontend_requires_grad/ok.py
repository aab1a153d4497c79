"""Wav2Vec2Model after a trainable front-end, with the feature encoder frozen.

freeze_feature_encoder() clears Wav2Vec2FeatureEncoder._requires_grad, so the encoder no
longer tries to set requires_grad on its (non-leaf) input; gradients still flow through the
frozen convolutions back into the user's front-end, and the transformer layers still train.
"""
import torch
import torch.nn as nn
from transformers import Wav2Vec2Config, Wav2Vec2Model


class SpeechModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.front_end = nn.Conv1d(1, 1, kernel_size=5, padding=2)   # learnable pre-filter
        self.configuration = Wav2Vec2Config(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
            conv_dim=(8, 8), conv_kernel=(10, 3), conv_stride=(5, 2),
            num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2)
        self.wav2vec_feature = Wav2Vec2Model(self.configuration)
        self.wav2vec_feature.freeze_feature_encoder()
        self.wav2vec_feature = self.wav2vec_feature.train()
        self.head = nn.Linear(16, 3)

    def forward(self, wav):
        wav = self.front_end(wav.unsqueeze(1)).squeeze(1)      # non-leaf, requires grad
        feats = self.wav2vec_feature(wav).last_hidden_state
        return self.head(feats.mean(dim=1))


torch.manual_seed(0)
model = SpeechModel()
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
wav, y = torch.randn(2, 400), torch.tensor([0, 2])
for step in range(2):
    loss = nn.functional.cross_entropy(model(wav), y)
    opt.zero_grad()
    loss.backward()
    assert model.front_end.weight.grad is not None, "the front-end gets no gradient"
    opt.step()
print("trained")
