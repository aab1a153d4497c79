"""A model of ``transformers.models.clip`` for gradguard: CLIP's text encoder, where its
token embedding is. Checked against transformers 5.24.0 (``models/clip/modeling_clip.py``,
``configuration_clip.py``).

- ``CLIPTextModel`` holds ``embeddings.token_embedding`` and
  ``embeddings.position_embedding`` (``nn.Embedding``); ``get_input_embeddings`` is the
  token embedding, whose weight is a leaf Parameter that requires grad.
- ``forward(input_ids)`` hands back ``last_hidden_state`` and ``pooler_output``.

Left out: the encoder's layers (one linear layer stands for them), the attention masks,
the pooling at the end-of-text token (the last position stands for it), the vision tower
and ``CLIPModel``.
"""

import torch
import torch.nn as nn

from transformers.configuration_utils import PreTrainedConfig
from transformers.modeling_outputs import BaseModelOutput
from transformers.modeling_utils import PreTrainedModel


class CLIPTextConfig(PreTrainedConfig):
    def __init__(self, vocab_size=49408, hidden_size=512, max_position_embeddings=77,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings


class CLIPTextEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embedding = nn.Embedding(config.max_position_embeddings,
                                               config.hidden_size)

    def forward(self, input_ids=None, position_ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.token_embedding(input_ids)
        if position_ids is None:
            position_ids = torch.arange(inputs_embeds.shape[-2])[None]
        return inputs_embeds + self.position_embedding(position_ids)


class CLIPTextModel(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embeddings = CLIPTextEmbeddings(config)
        self.encoder = nn.Linear(config.hidden_size, config.hidden_size)
        self.final_layer_norm = nn.LayerNorm(config.hidden_size)
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.token_embedding

    def set_input_embeddings(self, value):
        self.embeddings.token_embedding = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, **kwargs):
        hidden_states = self.embeddings(input_ids=input_ids, position_ids=position_ids)
        hidden_states = self.final_layer_norm(self.encoder(hidden_states))
        return BaseModelOutput(last_hidden_state=hidden_states,
                               pooler_output=hidden_states[:, -1])
