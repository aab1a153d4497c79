"""fastmoe's Megatron balance loss: the per-layer gate losses are gathered with
torch.tensor(loss_list), which copies their values into a new leaf without grad_fn, so
the balance loss never trains the gates.

Source: https://github.com/laekov/fastmoe/issues/49
Shape: new-errors
Symptom: balance loss is not optimized
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class NaiveGate(nn.Module):
    def __init__(self, d_model, num_expert, top_k=2):
        super().__init__()
        self.gate = nn.Linear(d_model, num_expert)
        self.num_expert, self.top_k = num_expert, top_k
        self.loss = None

    def set_loss(self, loss):
        self.loss = loss

    def get_loss(self, clear=True):
        loss = self.loss
        if clear:
            self.loss = None
        return loss

    def forward(self, inp):
        gate = self.gate(inp)
        gate_top_k_val, gate_top_k_idx = torch.topk(gate, k=self.top_k, dim=-1)
        score = F.softmax(gate, dim=-1)
        self.set_loss(self.num_expert * (score.mean(0) ** 2).sum())
        return gate_top_k_idx, F.softmax(gate_top_k_val, dim=-1)


class MoELayer(nn.Module):
    def __init__(self, d_model=8, num_expert=4):
        super().__init__()
        self.gate = NaiveGate(d_model, num_expert)
        self.experts = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(num_expert))

    def forward(self, x):
        idx, score = self.gate(x)
        out = torch.stack([torch.stack([self.experts[e](row) for e in experts])
                           for row, experts in zip(x, idx.tolist())])
        return (out * score.unsqueeze(-1)).sum(1)


torch.manual_seed(0)
layers = nn.ModuleList(MoELayer() for _ in range(2))
x = torch.randn(5, 8)
for layer in layers:
    x = layer(x)
lm_loss = x.pow(2).mean()
loss_list = [layer.gate.get_loss(clear=False) for layer in layers]
bal_loss = torch.tensor(loss_list).mean()  # culprit: GG310
loss = lm_loss + 0.01 * bal_loss
loss.backward()
assert bal_loss.requires_grad, "balance loss is not optimized"
