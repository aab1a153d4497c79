"""Probe of transformers' PreTrainedModel helpers on tiny models built from configs (no
download): where the input embedding is, what enable_input_require_grads and gradient
checkpointing make of its output, what resize_token_embeddings keeps, which weights are
tied, and what Wav2Vec2's feature encoder does to an input that requires grad."""
import json

import torch
import torch.nn as nn
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    LlamaConfig,
    LlamaForCausalLM,
    Wav2Vec2Config,
    Wav2Vec2Model,
)


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def tensor_facts(tensor):
    return {"leaf": tensor.is_leaf, "requires_grad": tensor.requires_grad}


def llama(**overrides):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=32, **overrides)
    return LlamaForCausalLM(config)


def probe_llama():
    model = llama()
    embedding = model.get_input_embeddings()
    ids = torch.tensor([[1, 2, 3, 4]])
    record("llama_layout", embedding_is_embed_tokens=embedding is model.model.embed_tokens,
           tied=model.lm_head.weight is embedding.weight,
           attention=sorted(["q_proj", "k_proj", "v_proj", "o_proj"]),
           has_q_proj=isinstance(model.model.layers[0].self_attn.q_proj, nn.Linear),
           embedding_output=tensor_facts(embedding(ids)))
    out = model(input_ids=ids, labels=ids)
    record("llama_forward", loss=tensor_facts(out.loss), logits=tensor_facts(out.logits),
           no_labels_loss_is_none=model(input_ids=ids).loss is None)
    model.enable_input_require_grads()
    record("llama_hook_trainable_weight", output=tensor_facts(embedding(ids)))
    embedding.weight.requires_grad_(False)
    record("llama_hook_frozen_weight", output=tensor_facts(embedding(ids)))
    model.disable_input_require_grads()
    record("llama_hook_removed", output=tensor_facts(embedding(ids)))

    model = llama()
    model.model.embed_tokens.weight.requires_grad_(False)
    model.gradient_checkpointing_enable()
    record("llama_checkpointing_hook",
           output=tensor_facts(model.get_input_embeddings()(ids)))

    model = llama(tie_word_embeddings=True)
    record("llama_tied", tied=model.lm_head.weight is model.model.embed_tokens.weight)


def probe_resize():
    torch.manual_seed(0)
    model = CLIPTextModel(CLIPTextConfig(vocab_size=7, hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2,
                                         max_position_embeddings=16))
    embedding = model.get_input_embeddings()
    weight = embedding.weight
    record("clip_layout", embedding_is_token_embedding=embedding is
           model.embeddings.token_embedding, weight=tensor_facts(weight))
    resized = model.resize_token_embeddings(9)
    record("clip_resized", same_layer=resized is embedding,
           still_input_embeddings=model.get_input_embeddings() is embedding,
           same_weight=embedding.weight is weight, weight=tensor_facts(embedding.weight),
           rows=embedding.num_embeddings)
    embedding.weight.requires_grad_(False)
    model.resize_token_embeddings(11)
    record("clip_resized_frozen", weight=tensor_facts(embedding.weight))
    out = model(torch.tensor([[0, 2, 8, 1]]))
    record("clip_forward", last_hidden_state=tensor_facts(out.last_hidden_state))


def probe_wav2vec2():
    torch.manual_seed(0)
    config = Wav2Vec2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, conv_dim=(8, 8), conv_kernel=(10, 3),
                            conv_stride=(5, 2), num_conv_pos_embeddings=4,
                            num_conv_pos_embedding_groups=2)
    model = Wav2Vec2Model(config)
    wav = torch.randn(2, 400)
    front = nn.Linear(400, 400)
    for training in (True, False):
        model.train(training)
        for name, values in (("raw", wav), ("computed", front(wav))):
            try:
                out = model(values).last_hidden_state
                record("wav2vec2_input", training=training, input=name, raised=False,
                       output=tensor_facts(out))
            except RuntimeError:
                record("wav2vec2_input", training=training, input=name, raised=True)
    model.freeze_feature_encoder()
    model.train()
    out = model(front(wav)).last_hidden_state
    record("wav2vec2_frozen_encoder", output=tensor_facts(out),
           encoder_weights=sorted({p.requires_grad for p in
                                   model.feature_extractor.parameters()}),
           projection_trainable=model.feature_projection.parameters().__next__().requires_grad)


probe_llama()
probe_resize()
probe_wav2vec2()
