"""A model of ``peft.tuners`` for gradguard: LoRA (``tuners.lora``)."""

from peft.tuners.lora import LoraConfig, LoraModel

__all__ = ["LoraConfig", "LoraModel"]
