"""Voxtral + LoRA: audio embeddings written in place into inputs_embeds, a leaf made to require grad

Source: https://github.com/huggingface/transformers/issues/40488
Shape: libraries
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
# VoxtralForConditionalGeneration.forward (transformers 4.55.4, models/voxtral/
# modeling_voxtral.py) writes the audio embeddings into the text embeddings in place.
# With LoRA + gradient checkpointing the token embedding is frozen and
# enable_input_require_grads() hooks its output with requires_grad_(True), so
# inputs_embeds is a leaf that requires grad. The audio tower is reduced to a projector
# and the language model to a tiny Llama; the merge code is the 4.55.4 text.
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
            inputs_embeds[audio_token_mask] = audio_embeds  # culprit: GG101
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
opt.step()
print("loss", out.loss.item())
