"""A model of ``transformers.models.clip`` for gradguard (``modeling_clip``)."""

from transformers.models.clip.modeling_clip import CLIPTextConfig, CLIPTextModel

__all__ = ["CLIPTextConfig", "CLIPTextModel"]
