"""A model of ``peft.tuners.lora.layer`` for gradguard: the LoRA layers PEFT puts in the
place of the layers it targets, and what their forward does to autograd. Checked against
peft 0.21.2 (``tuners/lora/layer.py``, ``tuners/tuners_utils.py``).

- ``Linear(base_layer, adapter_name, r, lora_alpha, lora_dropout, fan_in_fan_out)``
  wraps a ``nn.Linear`` (or transformers' ``Conv1D``, ``fan_in_fan_out=True``): its
  adapter's ``lora_A``/``lora_B`` are ``nn.Linear`` layers in ``nn.ModuleDict``s, the
  dropout an ``nn.Dropout`` (``nn.Identity`` at 0), ``scaling`` ``lora_alpha / r``;
  ``lora_B`` starts at zero. ``forward`` adds the adapter's output **out of place**:
  ``result = result + lora_B(lora_A(dropout(x))) * scaling`` (so a base output that is
  a leaf requiring grad, as the input embedding hook makes it, is never written).
- ``Embedding(base_layer, ...)`` wraps an ``nn.Embedding``: ``lora_embedding_A`` (zeros,
  ``r x num_embeddings``) and ``lora_embedding_B`` (normal, ``embedding_dim x r``) are
  Parameters in ``nn.ParameterDict``s; ``forward`` adds ``(embed(x, A.T) @ B.T) *
  scaling`` out of place, as 0.21.2 does (0.7 added it in place: PR 1372).
- With the adapters disabled, ``forward`` is the base layer's.

Left out (unknown to the engine, as without a model): ``merge``/``unmerge`` (they write
the delta into the base weight through ``.data``), mixed adapter batches, LoRA variants
(DoRA, aLoRA ...), biases, quantised and convolution layers, tensor parallelism.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


def _start(layer, base_layer, adapter_name, r, lora_alpha):
    """What every LoRA layer holds: its base layer, its adapter's rank and scaling, which
    adapter is active, whether adapters are merged or disabled (properties in peft)."""
    layer.base_layer = base_layer
    layer.active_adapter = adapter_name
    layer.active_adapters = [adapter_name]
    layer.r = {adapter_name: r}
    layer.scaling = {adapter_name: lora_alpha / r}
    layer.merged_adapters = []
    layer.merged = False
    layer.disable_adapters = False


class Linear(nn.Module):
    def __init__(self, base_layer, adapter_name, r=8, lora_alpha=8, lora_dropout=0.0,
                 fan_in_fan_out=False, **kwargs):
        super().__init__()
        _start(self, base_layer, adapter_name, r, lora_alpha)
        self.fan_in_fan_out = fan_in_fan_out
        if fan_in_fan_out:  # transformers' Conv1D keeps its weight as (in, out)
            in_features, out_features = base_layer.weight.shape
        else:
            in_features, out_features = base_layer.in_features, base_layer.out_features
        dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else nn.Identity()
        self.lora_dropout = nn.ModuleDict({adapter_name: dropout})
        self.lora_A = nn.ModuleDict({adapter_name: nn.Linear(in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({adapter_name: nn.Linear(r, out_features, bias=False)})
        with torch.no_grad():
            self.lora_B[adapter_name].weight.zero_()

    def forward(self, x, *args, **kwargs):
        result = self.base_layer(x, *args, **kwargs)
        if self.disable_adapters or self.merged:
            return result
        for active_adapter in self.active_adapters:
            lora_A = self.lora_A[active_adapter]
            lora_B = self.lora_B[active_adapter]
            dropout = self.lora_dropout[active_adapter]
            scaling = self.scaling[active_adapter]
            result = result + lora_B(lora_A(dropout(x))) * scaling
        return result


class Embedding(nn.Module):
    def __init__(self, base_layer, adapter_name, r=8, lora_alpha=8, lora_dropout=0.0,
                 **kwargs):
        super().__init__()
        _start(self, base_layer, adapter_name, r, lora_alpha)
        self.lora_dropout = nn.ModuleDict({adapter_name: nn.Identity()})
        self.lora_embedding_A = nn.ParameterDict(
            {adapter_name: nn.Parameter(torch.zeros(r, base_layer.num_embeddings))})
        self.lora_embedding_B = nn.ParameterDict(
            {adapter_name: nn.Parameter(torch.randn(base_layer.embedding_dim, r))})

    def _embed(self, input, weight, input_fn=None, output_fn=None):
        base_layer = self.base_layer
        return F.embedding(input, weight, padding_idx=base_layer.padding_idx,
                           max_norm=base_layer.max_norm)

    def forward(self, x, *args, **kwargs):
        result = self.base_layer(x, *args, **kwargs)
        if self.disable_adapters or self.merged:
            return result
        for active_adapter in self.active_adapters:
            embedding_A = self.lora_embedding_A[active_adapter].T
            embedding_B = self.lora_embedding_B[active_adapter].T
            scaling = self.scaling[active_adapter]
            after_A = self._embed(x, embedding_A)
            result = result + (after_A @ embedding_B) * scaling
        return result
