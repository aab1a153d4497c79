"""PEFT LoRA on an embedding: `result +=` on the base embedding output that a hook made a grad-requiring leaf

Source: https://github.com/huggingface/peft/pull/1372
Shape: libraries
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
# lora.Embedding.forward as released before the fix (peft 0.7.x, src/peft/tuners/lora/
# layer.py) adds the LoRA delta into the base embedding output in place. The base
# nn.Embedding carries the enable_input_require_grads() hook (gradient checkpointing /
# prepare_model_for_kbit_training run before get_peft_model), whose requires_grad_(True)
# turns the frozen embedding's output into a leaf that requires grad.
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from peft import LoraConfig, get_peft_model
from peft.tuners.lora import layer as lora_layer


def embedding_forward_0_7(self, x, *args, **kwargs):
    if self.disable_adapters:
        if self.merged:
            self.unmerge()
        result = self.base_layer(x, *args, **kwargs)
    elif self.merged:
        result = self.base_layer(x, *args, **kwargs)
    else:
        result = self.base_layer(x, *args, **kwargs)
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_embedding_A:
                continue
            embedding_A = self.lora_embedding_A[active_adapter].T
            embedding_B = self.lora_embedding_B[active_adapter].T
            scaling = self.scaling[active_adapter]
            after_A = self._embed(x, embedding_A)
            result += (after_A @ embedding_B) * scaling  # culprit: GG101
    return result


lora_layer.Embedding.forward = embedding_forward_0_7

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=32))
for p in model.parameters():
    p.requires_grad = False
model.enable_input_require_grads()
model = get_peft_model(model, LoraConfig(r=4, target_modules=["c_attn", "wte"], fan_in_fan_out=True))
model.train()
ids = torch.randint(0, 50, (2, 8))
out = model(input_ids=ids, labels=ids)
out.loss.backward()
print("loss", out.loss.item())
