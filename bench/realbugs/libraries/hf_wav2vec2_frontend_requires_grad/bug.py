"""Wav2Vec2Model inside a user's own model: the feature encoder sets requires_grad on a non-leaf input

Source: https://github.com/huggingface/transformers/issues/17909
Shape: libraries
Symptom: you can only change requires_grad flags of leaf variables
"""
# The user puts a Wav2Vec2Model (built from a config) after a trainable front-end of
# their own and trains the whole thing. Wav2Vec2FeatureEncoder.forward (transformers
# models/wav2vec2/modeling_wav2vec2.py) does, in training mode,
#     hidden_states = input_values[:, None]
#     if self._requires_grad and self.training:
#         hidden_states.requires_grad = True
# which only works when input_values is raw data; here it is the output of the front-end.
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
        self.wav2vec_feature = self.wav2vec_feature.train()   # culprit: -
        self.head = nn.Linear(16, 3)

    def forward(self, wav):
        wav = self.front_end(wav.unsqueeze(1)).squeeze(1)      # non-leaf, requires grad
        feats = self.wav2vec_feature(wav).last_hidden_state   # culprit: GG103
        return self.head(feats.mean(dim=1))


torch.manual_seed(0)
model = SpeechModel()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
wav, y = torch.randn(2, 400), torch.tensor([0, 2])
for step in range(2):
    loss = nn.functional.cross_entropy(model(wav), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained")
