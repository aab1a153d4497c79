"""A model of ``transformers.modeling_utils`` for gradguard: what ``PreTrainedModel`` does
to autograd. Checked against transformers 5.24.0 (``modeling_utils.py``,
``tests/library_probes/transformers_*``).

- A ``PreTrainedModel`` is an ``nn.Module`` holding its ``config``; ``post_init`` ties the
  output embedding's weight to the input embedding's (``tie_weights``) where
  ``config.tie_word_embeddings`` says so: the two layers then share one leaf.
- ``get_input_embeddings``/``set_input_embeddings``: each modelled architecture says
  where its token embedding is (the real base class searches ``_input_embed_layer``,
  ``embeddings``, ``model``, ``language_model`` and ``base_model`` in turn).
- ``enable_input_require_grads`` registers a forward hook on the input embedding layer
  that calls ``output.requires_grad_(True)``: with the embedding's weight frozen the
  output is a leaf that requires grad (an in-place write into it raises), with it
  trainable the call changes nothing. ``gradient_checkpointing_enable`` (and
  ``activation_checkpointing_enable``) calls it for a model whose ``main_input_name`` is
  ``input_ids``.
- ``resize_token_embeddings(n)`` keeps the embedding layer and its weight, the same leaf
  Parameter with the same ``requires_grad``, its rows resized outside autograd (the real
  one assigns ``weight.data``; the model ``set_``s it under ``torch.no_grad()``), then
  ties the weights again.

Left out (unknown to the engine, as without a model): ``from_pretrained`` and the hub,
the checkpointing itself (the layers run without ``torch.utils.checkpoint``), the values
of resized rows, quantisation, device maps, generation. The real
``enable_input_require_grads`` hooks the input embedding of every ``PreTrainedModel``
among ``modules()``; the model hooks the outer model's, the same layer for the
architectures modelled here.
"""

import torch
import torch.nn as nn


def _make_inputs_require_grads(module, input, output):
    output.requires_grad_(True)


class PreTrainedModel(nn.Module):
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True

    def __init__(self, config, *inputs, **kwargs):
        super().__init__()
        self.config = config

    def post_init(self):
        # a property of the layers' checkpointing flags, really: off until enabled
        self.is_gradient_checkpointing = False
        self.tie_weights()

    def get_input_embeddings(self):
        raise NotImplementedError

    def set_input_embeddings(self, value):
        raise NotImplementedError

    def get_output_embeddings(self):
        return None

    def tie_weights(self, missing_keys=None, recompute_mapping=True):
        output_embeddings = self.get_output_embeddings()
        if output_embeddings is not None and self.config.tie_word_embeddings:
            output_embeddings.weight = self.get_input_embeddings().weight

    def enable_input_require_grads(self):
        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(
            _make_inputs_require_grads)

    def disable_input_require_grads(self):
        self._require_grads_hook.remove()

    def activation_checkpointing_enable(self, activation_checkpointing_kwargs=None,
                                        every_n_layers=1, offload=False):
        self.is_gradient_checkpointing = True
        if self.main_input_name == "input_ids":
            self.enable_input_require_grads()

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None, **kwargs):
        self.activation_checkpointing_enable(gradient_checkpointing_kwargs)

    def resize_token_embeddings(self, new_num_tokens=None, pad_to_multiple_of=None,
                                mean_resizing=True):
        embeddings = self.get_input_embeddings()
        if new_num_tokens is None and pad_to_multiple_of is None:
            return embeddings
        weight = embeddings.weight
        if new_num_tokens is None:
            new_num_tokens = weight.shape[0]
        if pad_to_multiple_of is not None:
            new_num_tokens = -(-new_num_tokens // pad_to_multiple_of) * pad_to_multiple_of
        with torch.no_grad():
            added = max(new_num_tokens - weight.shape[0], 0)
            rows = weight.new_empty(added, weight.shape[1]).normal_()
            weight.set_(torch.cat([weight[:new_num_tokens], rows]))
        embeddings.num_embeddings = new_num_tokens
        self.tie_weights()
        return embeddings
