"""A model of ``peft.tuners.lora`` for gradguard (``config``, ``layer``, ``model``)."""

from peft.tuners.lora.config import LoraConfig
from peft.tuners.lora.layer import Embedding, Linear
from peft.tuners.lora.model import LoraModel

__all__ = ["Embedding", "Linear", "LoraConfig", "LoraModel"]
