"""Probe of peft's LoRA on tiny transformers models built from configs (no download):
which layers get_peft_model replaces and with what, which parameters stay trainable,
whether the input embedding's output is hooked to require grad (with and without
gradient checkpointing), and what the LoRA layers' forward hands back."""
import json

import torch
import torch.nn as nn
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def tensor_facts(tensor):
    return {"leaf": tensor.is_leaf, "requires_grad": tensor.requires_grad}


def llama():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32))


IDS = torch.tensor([[1, 2, 3, 4]])


def probe_linear(checkpointing):
    base = llama()
    if checkpointing:
        base.gradient_checkpointing_enable()
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8,
                                            target_modules=["q_proj", "v_proj"]))
    inner = model.get_base_model()
    attention = inner.model.layers[0].self_attn
    q_proj = attention.q_proj
    record("lora_linear", checkpointing=checkpointing, base_is_inner=inner is base,
           layer=type(q_proj).__name__, wraps=isinstance(q_proj.base_layer, nn.Linear),
           k_proj_kept=isinstance(attention.k_proj, nn.Linear)
           and type(attention.k_proj) is nn.Linear,
           lora_A=isinstance(q_proj.lora_A["default"], nn.Linear),
           lora_A_trainable=q_proj.lora_A["default"].weight.requires_grad,
           lora_B_zero=bool((q_proj.lora_B["default"].weight == 0).all()),
           base_frozen=not q_proj.base_layer.weight.requires_grad,
           embedding_frozen=not inner.model.embed_tokens.weight.requires_grad,
           head_frozen=not inner.lm_head.weight.requires_grad,
           scaling=q_proj.scaling["default"],
           embedding_output=tensor_facts(inner.get_input_embeddings()(IDS)))
    out = model(input_ids=IDS, labels=IDS)
    record("lora_forward", checkpointing=checkpointing, loss=tensor_facts(out.loss))
    x = torch.randn(2, 16)
    record("lora_linear_forward", output=tensor_facts(q_proj(x)),
           equals_base=bool(torch.allclose(q_proj(x), q_proj.base_layer(x))))


def probe_embedding():
    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50,
                                      n_positions=32))
    base.enable_input_require_grads()
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["c_attn", "wte"],
                                            fan_in_fan_out=True))
    inner = model.get_base_model()
    wte = inner.transformer.wte
    c_attn = inner.transformer.h[0].attn.c_attn
    record("lora_embedding", layer=type(wte).__name__,
           wraps=isinstance(wte.base_layer, nn.Embedding),
           A_trainable=wte.lora_embedding_A["default"].requires_grad,
           A_zero=bool((wte.lora_embedding_A["default"] == 0).all()),
           B_trainable=wte.lora_embedding_B["default"].requires_grad,
           base_output=tensor_facts(wte.base_layer(IDS)), output=tensor_facts(wte(IDS)),
           conv1d_layer=type(c_attn).__name__, conv1d_wrapped=type(c_attn.base_layer).__name__,
           conv1d_lora_A_in=c_attn.lora_A["default"].in_features,
           conv1d_output=tensor_facts(c_attn(torch.randn(2, 16))))
    out = model(input_ids=IDS, labels=IDS)
    out.loss.backward()
    record("lora_embedding_backward",
           B_grad=wte.lora_embedding_B["default"].grad is not None,
           base_grad=wte.base_layer.weight.grad is None)


probe_linear(checkpointing=False)
probe_linear(checkpointing=True)
probe_embedding()
