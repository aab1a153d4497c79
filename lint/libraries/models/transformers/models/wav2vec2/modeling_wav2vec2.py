"""A model of ``transformers.models.wav2vec2`` for gradguard: Wav2Vec2's feature encoder
and what it does to its input. Checked against transformers 5.24.0
(``models/wav2vec2/modeling_wav2vec2.py``, ``configuration_wav2vec2.py``).

- ``Wav2Vec2FeatureEncoder.forward`` takes ``input_values[:, None]`` and, while its
  ``_requires_grad`` is set and it is in training mode, sets ``requires_grad = True`` on
  it, as the real one does: torch raises where ``input_values`` is computed from tensors
  that require grad. ``freeze_feature_encoder`` freezes its parameters and clears
  ``_requires_grad``.
- ``Wav2Vec2Model.forward`` runs the feature encoder, a projection and an encoder, and
  hands back ``last_hidden_state`` and ``extract_features``.

Left out: the convolutions' norms, the transformer encoder's layers (one linear layer
stands for them), masking, adapters, the heads (``Wav2Vec2ForCTC`` ...).
"""

import torch.nn as nn
import torch.nn.functional as F

from transformers.configuration_utils import PreTrainedConfig
from transformers.modeling_outputs import BaseModelOutput
from transformers.modeling_utils import PreTrainedModel


class Wav2Vec2Config(PreTrainedConfig):
    def __init__(self, hidden_size=768, conv_dim=(512, 512, 512, 512, 512, 512, 512),
                 conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2),
                 conv_bias=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.conv_dim = list(conv_dim)
        self.conv_stride = list(conv_stride)
        self.conv_kernel = list(conv_kernel)
        self.conv_bias = conv_bias


class Wav2Vec2ConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, bias):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, bias=bias)

    def forward(self, hidden_states):
        return F.gelu(self.conv(hidden_states))


class Wav2Vec2FeatureEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        channels = [1] + config.conv_dim
        self.conv_layers = nn.ModuleList(
            Wav2Vec2ConvLayer(channels[i], channels[i + 1], config.conv_kernel[i],
                              config.conv_stride[i], config.conv_bias)
            for i in range(len(config.conv_dim)))
        self._requires_grad = True

    def _freeze_parameters(self):
        for param in self.parameters():
            param.requires_grad = False
        self._requires_grad = False

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states


class Wav2Vec2Model(PreTrainedModel):
    main_input_name = "input_values"

    def __init__(self, config):
        super().__init__(config)
        self.feature_extractor = Wav2Vec2FeatureEncoder(config)
        self.feature_projection = nn.Linear(config.conv_dim[-1], config.hidden_size)
        self.encoder = nn.Linear(config.hidden_size, config.hidden_size)
        self.post_init()

    def freeze_feature_encoder(self):
        self.feature_extractor._freeze_parameters()

    def forward(self, input_values, attention_mask=None, mask_time_indices=None, **kwargs):
        extract_features = self.feature_extractor(input_values).transpose(1, 2)
        hidden_states = self.encoder(self.feature_projection(extract_features))
        return BaseModelOutput(last_hidden_state=hidden_states,
                               extract_features=extract_features)
