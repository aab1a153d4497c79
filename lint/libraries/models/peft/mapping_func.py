"""A model of ``peft.mapping_func`` for gradguard: ``get_peft_model``. Checked against
peft 0.21.2 (``mapping_func.py``, ``mapping.py``).

- ``get_peft_model(model, config)`` wraps the model in a ``PeftModelForCausalLM`` where
  ``config.task_type`` is ``"CAUSAL_LM"``, in a ``PeftModel`` otherwise (other task
  types' wrappers forward as ``PeftModel`` does, for what autograd can tell).

Left out: mixed adapters, prompt learning."""

from peft.peft_model import PeftModel, PeftModelForCausalLM


def get_peft_model(model, peft_config, adapter_name="default", mixed=False,
                   autocast_adapter_dtype=True, revision=None, low_cpu_mem_usage=False):
    if peft_config.task_type == "CAUSAL_LM":
        return PeftModelForCausalLM(model, peft_config, adapter_name=adapter_name)
    return PeftModel(model, peft_config, adapter_name=adapter_name)
