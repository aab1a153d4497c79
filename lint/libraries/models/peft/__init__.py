"""A model of ``peft`` for gradguard: what LoRA adaptation does to autograd. Checked
against peft 0.21.2 (``tests/library_probes/peft_*``); each module says what it covers and
what it leaves out:

- ``mapping_func``: ``get_peft_model``;
- ``peft_model``: ``PeftModel`` and ``PeftModelForCausalLM`` (the input embedding hook,
  forwarding to the adapted model);
- ``tuners.lora``: ``LoraConfig``, ``LoraModel`` (which layers are replaced, which
  parameters frozen) and the LoRA ``Linear`` and ``Embedding`` layers' forward.

A name not exported here (other tuners, ``prepare_model_for_kbit_training``,
``PeftModel.from_pretrained``) is unknown to the engine, as without a model.
"""

from peft.mapping_func import get_peft_model
from peft.peft_model import PeftModel, PeftModelForCausalLM
from peft.tuners.lora import LoraConfig, LoraModel

__all__ = ["LoraConfig", "LoraModel", "PeftModel", "PeftModelForCausalLM", "get_peft_model"]
