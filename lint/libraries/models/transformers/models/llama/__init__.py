"""A model of ``transformers.models.llama`` for gradguard (``modeling_llama``)."""

from transformers.models.llama.modeling_llama import LlamaConfig, LlamaForCausalLM, LlamaModel

__all__ = ["LlamaConfig", "LlamaForCausalLM", "LlamaModel"]
