"""A model of ``transformers`` for gradguard: the names it exports that the models below
define (``from transformers import LlamaForCausalLM``). Checked against transformers
5.24.0; each module says what it covers and what it leaves out:

- ``modeling_utils``: ``PreTrainedModel`` (input embeddings, ``enable_input_require_grads``,
  gradient checkpointing's hook, ``resize_token_embeddings``, ``tie_weights``);
- ``pytorch_utils``: GPT-2's ``Conv1D``;
- ``models.*``: the architectures modelled (CLIP's text encoder, Wav2Vec2, Llama, GPT-2);
- ``trainer``, ``training_args``: ``Trainer``'s training and evaluation loops, in the
  grad modes and order the real one runs them.

A name not exported here (a tokenizer, ``AutoModel``, ``from_pretrained``) is unknown to
the engine, as without a model.
"""

from transformers.configuration_utils import PreTrainedConfig, PretrainedConfig
from transformers.modeling_utils import PreTrainedModel
from transformers.models.clip import CLIPTextConfig, CLIPTextModel
from transformers.models.gpt2 import GPT2Config, GPT2LMHeadModel, GPT2Model
from transformers.models.llama import LlamaConfig, LlamaForCausalLM, LlamaModel
from transformers.models.wav2vec2 import Wav2Vec2Config, Wav2Vec2Model
from transformers.pytorch_utils import Conv1D
from transformers.trainer import Trainer
from transformers.training_args import TrainingArguments

__all__ = [
    "CLIPTextConfig", "CLIPTextModel", "Conv1D", "GPT2Config", "GPT2LMHeadModel",
    "GPT2Model", "LlamaConfig", "LlamaForCausalLM", "LlamaModel", "PreTrainedConfig",
    "PreTrainedModel", "PretrainedConfig", "Trainer", "TrainingArguments", "Wav2Vec2Config",
    "Wav2Vec2Model",
]
