"""A model of ``transformers.models.wav2vec2`` for gradguard (``modeling_wav2vec2``)."""

from transformers.models.wav2vec2.modeling_wav2vec2 import (
    Wav2Vec2Config,
    Wav2Vec2FeatureEncoder,
    Wav2Vec2Model,
)

__all__ = ["Wav2Vec2Config", "Wav2Vec2FeatureEncoder", "Wav2Vec2Model"]
