"""Voxtral + LoRA with the audio embeddings merged out of place (masked_scatter).

The fix that landed (PR 40671, and masked_scatter in later releases): the merge builds a new
tensor instead of writing into inputs_embeds, so the hooked embedding output that requires
grad is never modified in place, and the LoRA weights get gradients.
"""
# Same reduced Voxtral as bug.py (tiny Llama language model, projector for the audio tower).
import torch
import torch.nn as nn
from transformers import LlamaConfig, LlamaForCausalLM
from peft import LoraConfig, get_peft_model


class VoxtralForConditionalGeneration(LlamaForCausalLM):
    def __init__(self, config):
        super().__init__(config)
        self.multi_modal_projector = nn.Linear(8, config.hidden_size)  # stands in for whisper + projector

    def get_audio_embeds(self, input_features):
        return self.multi_modal_projector(input_features).reshape(-1, self.config.hidden_size)

    def forward(self, input_ids=None, input_features=None, inputs_embeds=None, labels=None, **kwargs):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        if input_features is not None:
            audio_embeds = self.get_audio_embeds(input_features)
            # replace text-audio token placeholders with audio embeddings
            audio_token_mask = input_ids == self.config.audio_token_id
            inputs_embeds = inputs_embeds.masked_scatter(audio_token_mask.unsqueeze(-1), audio_embeds)
        return super().forward(inputs_embeds=inputs_embeds, labels=labels, **kwargs)


torch.manual_seed(0)
config = LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
config.audio_token_id = 39
model = VoxtralForConditionalGeneration(config)
model.gradient_checkpointing_enable()          # also calls enable_input_require_grads()
model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

input_ids = torch.tensor([[1, 39, 39, 39, 5, 6, 7, 8]])
input_features = torch.randn(1, 3, 8)           # 3 audio frames -> 3 audio tokens
out = model(input_ids=input_ids, input_features=input_features, labels=input_ids)
out.loss.backward()
lora_B = model.base_model.model.model.layers[0].self_attn.q_proj.lora_B["default"].weight
assert lora_B.grad is not None, "the LoRA adapter gets no gradient"
opt.step()
print("loss", out.loss.item())
