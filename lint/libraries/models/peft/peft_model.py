"""A model of ``peft.peft_model`` for gradguard: the wrapper ``get_peft_model`` hands back.
Checked against peft 0.21.2 (``peft_model.py``).

- ``PeftModel(model, config)`` adapts ``model`` with a ``LoraModel`` (``base_model``;
  ``get_base_model()`` is the adapted model itself), then, unless the model says
  gradient checkpointing is off (``is_gradient_checkpointing``: a model without the
  attribute counts as on), calls its ``enable_input_require_grads()`` (or, lacking it,
  hooks ``get_input_embeddings()``'s output with ``requires_grad_(True)``).
- ``forward`` calls the adapted model with the same arguments;
  ``PeftModelForCausalLM.forward`` passes ``input_ids``, ``attention_mask``,
  ``inputs_embeds`` and ``labels`` on by name.

Left out: prompt learning, several adapters, ``disable_adapter``, saving and loading,
``generate``.
"""

import torch.nn as nn

from peft.tuners.lora.model import LoraModel


def _make_inputs_require_grad(module, input, output):
    output.requires_grad_(True)


class PeftModel(nn.Module):
    def __init__(self, model, peft_config, adapter_name="default", autocast_adapter_dtype=True,
                 low_cpu_mem_usage=False):
        super().__init__()
        self.active_adapter = adapter_name
        self.base_model = LoraModel(model, {adapter_name: peft_config}, adapter_name)
        if getattr(model, "is_gradient_checkpointing", True):
            if hasattr(model, "enable_input_require_grads"):
                model.enable_input_require_grads()
            elif hasattr(model, "get_input_embeddings"):
                model.get_input_embeddings().register_forward_hook(_make_inputs_require_grad)

    def get_base_model(self):
        return self.base_model.model

    def forward(self, *args, **kwargs):
        return self.get_base_model()(*args, **kwargs)


class PeftModelForCausalLM(PeftModel):
    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, labels=None,
                output_attentions=None, output_hidden_states=None, return_dict=None,
                task_ids=None, **kwargs):
        return self.base_model(input_ids=input_ids, attention_mask=attention_mask,
                               inputs_embeds=inputs_embeds, labels=labels, **kwargs)
