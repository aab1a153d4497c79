"""A model of ``peft.tuners.lora.config`` for gradguard: ``LoraConfig``'s fields that
decide what is adapted and how. Checked against peft 0.21.2 (``tuners/lora/config.py``).

Left out: every field the LoRA model here does not read (variants, ``modules_to_save``,
``layers_to_transform``, initialisation choices, biases)."""


class LoraConfig:
    def __init__(self, task_type=None, r=8, target_modules=None, lora_alpha=8,
                 lora_dropout=0.0, fan_in_fan_out=False, bias="none", **kwargs):
        self.task_type = task_type
        self.r = r
        self.target_modules = target_modules
        self.lora_alpha = lora_alpha
        self.lora_dropout = lora_dropout
        self.fan_in_fan_out = fan_in_fan_out
        self.bias = bias
