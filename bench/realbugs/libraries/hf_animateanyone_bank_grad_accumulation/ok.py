"""Moore-AnimateAnyone stage 1 with the reference-attention banks cleared after every micro-batch.

Each forward writes fresh bank entries, so clearing the reader and writer banks after every
accelerator.backward (not only on sync steps) means no micro-batch reads tensors from a
graph that an earlier backward already freed; accumulation over 2 micro-batches then works
and the reference UNet gets gradients through the banks.
"""
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
        accelerator.backward(loss)
        ref_grad = net.reference_unet.blocks[0].norm1.weight.grad
        assert ref_grad is not None, "the reference UNet gets no gradient"
        optimizer.step()
        optimizer.zero_grad()
    net.clear()
print("trained")
