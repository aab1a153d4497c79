"""Inspiration Tree load_tokens with the embedding rows written under torch.no_grad().

The fix from the thread: the learned vectors are copied into the resized token embedding
inside torch.no_grad(), so writing the rows of the grad-requiring weight is not recorded by
autograd. The text encoder then encodes prompts with the learned tokens.
"""
import json, os, tempfile
from types import SimpleNamespace
import torch
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer


def tiny_clip_tokenizer():
    d = tempfile.mkdtemp()
    words = ["a</w>", "photo</w>", "of</w>", "the</w>", "object</w>"]
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1, **{w: i + 2 for i, w in enumerate(words)}}
    with open(os.path.join(d, "vocab.json"), "w") as fh:
        json.dump(vocab, fh)
    with open(os.path.join(d, "merges.txt"), "w") as fh:
        fh.write("#version: 0.2\n")
    return CLIPTokenizer(os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt"))


def load_tokens(pipe, data, device):
    with torch.no_grad():
        added_tokens = []
        for t_ in data.keys():
            added_tokens.append(t_)
        num_added_tokens = pipe.tokenizer.add_tokens(added_tokens)
        pipe.text_encoder.resize_token_embeddings(len(pipe.tokenizer))
        for token_ in data.keys():
            ref_token = pipe.tokenizer.tokenize(token_)
            ref_indx = pipe.tokenizer.convert_tokens_to_ids(ref_token)[0]
            embd_cur = data[token_].to(device)
            pipe.text_encoder.embeddings.token_embedding.weight[ref_indx] = embd_cur
    return added_tokens


torch.manual_seed(0)
config = CLIPTextConfig(vocab_size=7, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                        num_attention_heads=2, max_position_embeddings=16, bos_token_id=0, eos_token_id=1)
pipe = SimpleNamespace(tokenizer=tiny_clip_tokenizer(), text_encoder=CLIPTextModel(config))
data = {"<v_l>": torch.randn(16), "<v_r>": torch.randn(16)}   # learned node vectors
load_tokens(pipe, data, "cpu")
idx = pipe.tokenizer.convert_tokens_to_ids("<v_l>")
weight = pipe.text_encoder.embeddings.token_embedding.weight
assert torch.equal(weight[idx], data["<v_l>"]), "the learned vector was not written"
ids = pipe.tokenizer("a photo of <v_l>", return_tensors="pt").input_ids
print(pipe.text_encoder(ids).last_hidden_state.shape)
