"""A model of ``transformers.configuration_utils`` for gradguard: a configuration is its
keyword arguments, as attributes. Checked against transformers 5.24.0
(``configuration_utils.py``).

Left out: every default the real configurations have but the models here do not read,
serialisation, the hub."""


class PreTrainedConfig:
    tie_word_embeddings = True

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def get_text_config(self, decoder=None, encoder=None):
        return self


PretrainedConfig = PreTrainedConfig
