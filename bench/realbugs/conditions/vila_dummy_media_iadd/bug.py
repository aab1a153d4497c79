"""VILA's _embed: when a batch carries dummy media, their embeddings are "consumed" with
`text_embeds += torch.sum(dummy_embed) * 0`; with the LLM frozen and
enable_input_require_grads() on (gradient checkpointing), text_embeds is a leaf that
requires grad, and the in-place add is refused.

Source: https://github.com/NVlabs/VILA/pull/199
Shape: conditions
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
from collections import deque

import torch
import torch.nn as nn


class TinyLLM(nn.Module):
    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)
        self.embed_tokens.register_forward_hook(make_inputs_require_grads)


class LlavaMetaForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.llm = TinyLLM()
        self.mm_projector = nn.Linear(4, 8)
        self.llm.requires_grad_(False)
        self.llm.enable_input_require_grads()

    def _embed(self, input_ids, media):
        text_embeds = self.llm.embed_tokens(input_ids)
        media_embeds = {name: deque(self.mm_projector(m) for m in images) for name, images in media.items()}
        # This is a workaround to make sure the dummy embeddings are consumed
        while media_embeds.get("dummy"):
            dummy_embed = media_embeds["dummy"].popleft()
            text_embeds += torch.sum(dummy_embed) * 0  # culprit: GG101
        return text_embeds

    def forward(self, input_ids, media, labels):
        logits = self.llm.lm_head(self._embed(input_ids, media))
        return nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


torch.manual_seed(0)
model = LlavaMetaForCausalLM()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
input_ids = torch.randint(0, 12, (2, 5))
loss = model(input_ids, {"dummy": [torch.zeros(1, 4)]}, input_ids)
loss.backward()
optimizer.step()
