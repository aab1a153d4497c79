"""Moore-AnimateAnyone stage 1: reference-attention banks cleared only on sync steps under accelerate accumulation

Source: https://github.com/MooreThreads/Moore-AnimateAnyone/issues/92
Shape: libraries
Symptom: Trying to backward through the graph a second time
"""
# ReferenceAttentionControl (src/models/mutual_self_attention.py) patches diffusers'
# BasicTransformerBlock.forward: the reference UNet "writes" its normed hidden states into
# self.bank, reader.update(writer) copies every bank entry to the denoising UNet, which
# "reads" them as extra keys/values. train_stage_1.py clears the banks only
# `if accelerator.sync_gradients:`. With gradient_accumulation_steps > 1 the second
# micro-batch still reads the first micro-batch's bank entries, whose graph the first
# accelerator.backward already freed. The UNets are reduced to conv_in + two blocks.
import torch
import torch.nn as nn
from accelerate import Accelerator
from diffusers.models.attention import BasicTransformerBlock


def hacked_basic_transformer_inner_forward(self, hidden_states, **kwargs):
    norm_hidden_states = self.norm1(hidden_states)
    if self.mode == "write":
        self.bank.append(norm_hidden_states.clone())
        attn_output = self.attn1(norm_hidden_states)
    else:  # "read"
        attn_output = self.attn1(norm_hidden_states,
                                 encoder_hidden_states=torch.cat([norm_hidden_states] + self.bank, dim=1))
    hidden_states = attn_output + hidden_states
    return self.ff(self.norm3(hidden_states)) + hidden_states


class UNet(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.conv_in = nn.Linear(16, 16)
        self.blocks = nn.ModuleList(BasicTransformerBlock(16, 2, 8) for _ in range(2))
        for b in self.blocks:
            b.mode, b.bank = mode, []
            b.forward = hacked_basic_transformer_inner_forward.__get__(b, BasicTransformerBlock)

    def forward(self, x):
        h = self.conv_in(x)
        for block in self.blocks:
            h = block(h)
        return h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.reference_unet, self.denoising_unet = UNet("write"), UNet("read")

    def forward(self, noisy_latents, ref_latents):
        self.reference_unet(ref_latents)
        for w, r in zip(self.reference_unet.blocks, self.denoising_unet.blocks):  # reader.update(writer)
            r.bank = [v.clone() for v in w.bank]
        return self.denoising_unet(noisy_latents)

    def clear(self):   # reference_control_reader.clear(); reference_control_writer.clear()
        for b in list(self.reference_unet.blocks) + list(self.denoising_unet.blocks):
            b.bank = []


torch.manual_seed(0)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
net = Net()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
net, optimizer = accelerator.prepare(net, optimizer)
for step in range(4):
    latents, ref, target = torch.randn(2, 6, 16), torch.randn(2, 6, 16), torch.randn(2, 6, 16)
    with accelerator.accumulate(net):
        loss = nn.functional.mse_loss(net(latents, ref), target)
        accelerator.backward(loss)  # culprit: GG207
        optimizer.step()
        optimizer.zero_grad()
    if accelerator.sync_gradients:  # culprit: -
        net.clear()
print("trained")
