"""A model of ``transformers.models.gpt2`` for gradguard: GPT-2, its layers' names and
its causal-LM loss. Checked against transformers 5.24.0 (``models/gpt2/modeling_gpt2.py``,
``configuration_gpt2.py``).

- ``GPT2LMHeadModel`` holds ``transformer`` (``wte``, ``wpe``, the blocks ``h``,
  ``ln_f``) and ``lm_head``, tied to ``wte`` (``tie_word_embeddings``, on by default);
  each block's ``attn`` has ``c_attn`` and ``c_proj``, its ``mlp`` ``c_fc`` and
  ``c_proj``, all ``Conv1D`` (the names PEFT's ``target_modules`` match).
  ``get_input_embeddings`` is ``transformer.wte``.
- ``forward(input_ids=None, ..., inputs_embeds=None, labels=None)``: with ``labels``, the
  shifted cross-entropy loss.

Left out: attention heads, the causal mask, caches, dropout, generation.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformers.configuration_utils import PreTrainedConfig
from transformers.modeling_outputs import BaseModelOutput, CausalLMOutput
from transformers.modeling_utils import PreTrainedModel
from transformers.pytorch_utils import Conv1D


class GPT2Config(PreTrainedConfig):
    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                 tie_word_embeddings=True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.tie_word_embeddings = tie_word_embeddings


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.n_embd
        self.c_attn = Conv1D(3 * config.n_embd, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_embd)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        weights = torch.softmax(query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5, dim=-1)
        return self.c_proj(weights @ value)


class GPT2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = Conv1D(4 * config.n_embd, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, 4 * config.n_embd)

    def forward(self, hidden_states):
        return self.c_proj(F.gelu(self.c_fc(hidden_states)))


class GPT2Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = GPT2Attention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = GPT2MLP(config)

    def forward(self, hidden_states):
        hidden_states = hidden_states + self.attn(self.ln_1(hidden_states))
        return hidden_states + self.mlp(self.ln_2(hidden_states))


class GPT2Model(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.h = nn.ModuleList(GPT2Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, value):
        self.wte = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                inputs_embeds=None, **kwargs):
        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)
        positions = torch.arange(inputs_embeds.shape[-2])[None]
        hidden_states = inputs_embeds + self.wpe(positions)
        for block in self.h:
            hidden_states = block(hidden_states)
        return BaseModelOutput(last_hidden_state=self.ln_f(hidden_states))


class GPT2LMHeadModel(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.transformer.wte

    def set_input_embeddings(self, value):
        self.transformer.wte = value

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                inputs_embeds=None, labels=None, **kwargs):
        outputs = self.transformer(input_ids=input_ids, inputs_embeds=inputs_embeds)
        logits = self.lm_head(outputs.last_hidden_state)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                   labels[:, 1:].reshape(-1), ignore_index=-100)
        return CausalLMOutput(loss=loss, logits=logits)
