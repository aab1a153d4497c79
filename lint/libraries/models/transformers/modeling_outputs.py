"""A model of ``transformers.modeling_outputs`` for gradguard: what a model's forward
hands back, read by field. Checked against transformers 5.24.0 (``modeling_outputs.py``).

Left out: reading a field by index or by key (``out[0]``, ``out["loss"]``), ``to_tuple``,
and the fields the models here do not fill (attentions, hidden states, caches)."""


class BaseModelOutput:
    def __init__(self, last_hidden_state=None, pooler_output=None, extract_features=None):
        self.last_hidden_state = last_hidden_state
        self.pooler_output = pooler_output
        self.extract_features = extract_features


class CausalLMOutput:
    def __init__(self, loss=None, logits=None):
        self.loss = loss
        self.logits = logits
