"""PEFT LoRA on an embedding, with the LoRA delta added out of place (the merged fix).

PR 1372 replaced `result += ...` by `result = result + ...` in lora.Embedding.forward, so the
hooked base embedding output (a leaf that requires grad) is never modified in place, and the
embedding's LoRA weights get gradients.
"""
# lora.Embedding.forward of peft 0.7.x (src/peft/tuners/lora/layer.py) with the PR's change.
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from peft import LoraConfig, get_peft_model
from peft.tuners.lora import layer as lora_layer


def embedding_forward_fixed(self, x, *args, **kwargs):
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
            result = result + (after_A @ embedding_B) * scaling
    return result


lora_layer.Embedding.forward = embedding_forward_fixed

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
wte = model.base_model.model.transformer.wte
assert wte.lora_embedding_B["default"].grad is not None, "the embedding adapter gets no gradient"
print("loss", out.loss.item())
