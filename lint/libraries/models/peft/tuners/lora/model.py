"""A model of ``peft.tuners.lora.model`` for gradguard: what ``LoraModel`` does to the
model it adapts. Checked against peft 0.21.2 (``tuners/lora/model.py``,
``tuners/tuners_utils.py``: ``inject_adapter``, ``_mark_only_adapters_as_trainable``).

- Every layer named in ``target_modules`` (a list of names: a layer whose own name, the
  last part of its path, is one of them) is replaced, in the module holding it, by a
  LoRA layer wrapping it: ``lora.Embedding`` for an ``nn.Embedding``, ``lora.Linear``
  for any other (``nn.Linear``, transformers' ``Conv1D``).
- Every parameter of the model but the adapters' is frozen (``requires_grad = False``),
  the embedding's too; the adapters' require grad.
- ``forward`` is the adapted model's.

What gradguard's engine sees of it: a replaced layer is seen where the module holding it
is at most three objects below the model (``transformer.wte`` of GPT-2); deeper ones
(``model.layers[0].self_attn.q_proj``) stay as they were, and what flows through them
is then not known to require grad or not (silent, never a finding).

Left out: ``target_modules`` as a set, a regular expression or left to the defaults per
architecture, and dotted names (then which layers are adapted is unknown: the model
leaves every parameter's ``requires_grad`` unknown too); ``modules_to_save``, biases
other than ``"none"``, ``merge_and_unload``, several adapters.
"""

import torch.nn as nn

from peft.tuners.lora.layer import Embedding, Linear


def _lora_layer(target, adapter_name, config):
    if isinstance(target, nn.Embedding):
        return Embedding(target, adapter_name, r=config.r, lora_alpha=config.lora_alpha,
                         lora_dropout=config.lora_dropout)
    return Linear(target, adapter_name, r=config.r, lora_alpha=config.lora_alpha,
                  lora_dropout=config.lora_dropout, fan_in_fan_out=config.fan_in_fan_out)


class LoraModel(nn.Module):
    prefix = "lora_"

    def __init__(self, model, config, adapter_name="default", low_cpu_mem_usage=False):
        super().__init__()
        self.model = model
        self.peft_config = config
        self.active_adapter = adapter_name
        lora_config = config[adapter_name]
        targets = lora_config.target_modules
        if isinstance(targets, (list, tuple)):
            model.requires_grad_(False)
            for module in model.modules():
                for name, child in module.named_children():
                    if name in targets:
                        setattr(module, name, _lora_layer(child, adapter_name, lora_config))
        else:
            model.requires_grad_(_unknown(targets))

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def get_base_model(self):
        return self.model


def _unknown(value):
    """A flag whose value gradguard cannot tell (which layers a pattern matches)."""
    return bool(value) and value is None
