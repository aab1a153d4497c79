"""A model of ``transformers.models.gpt2`` for gradguard (``modeling_gpt2``)."""

from transformers.models.gpt2.modeling_gpt2 import GPT2Config, GPT2LMHeadModel, GPT2Model

__all__ = ["GPT2Config", "GPT2LMHeadModel", "GPT2Model"]
