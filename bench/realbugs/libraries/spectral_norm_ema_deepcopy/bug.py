"""Spectral-norm SRF heads: deepcopy for the EMA copies crashes at ema_start_epoch

The fore and aft SRF heads are small MLPs whose hidden Linear layers go through the
hook-based nn.utils.spectral_norm (the zero-initialized output layer is left out).
That hook keeps `weight` on each layer as a tensor computed from weight_orig, a
non-leaf, so copy.deepcopy of a head, done once to start the EMA copies, fails.

Source: https://github.com/wandb/senpai/pull/2243
Shape: libraries
Symptom: Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol
"""
import copy

import torch
import torch.nn as nn


class SRFHead(nn.Module):
    def __init__(self, d_in=6, hidden=16, d_out=2, spectral=True):
        super().__init__()
        layers = []
        for i in range(2):
            lin = nn.Linear(d_in if i == 0 else hidden, hidden)
            if spectral:
                lin = nn.utils.spectral_norm(lin)  # culprit: -
            layers += [lin, nn.GELU()]
        self.hidden = nn.Sequential(*layers)
        self.out = nn.Linear(hidden, d_out)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, x):
        return self.out(self.hidden(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fore = SRFHead()
        self.aft = SRFHead()

    def forward(self, x):
        return self.fore(x) + self.aft(x)


@torch.no_grad()
def ema_update(ema, model, decay=0.99):
    for p_ema, p in zip(ema.parameters(), model.parameters()):
        p_ema.lerp_(p, 1 - decay)


def train(epochs=4, ema_start_epoch=2):
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ema_fore = ema_aft = None
    for epoch in range(epochs):
        x, y = torch.randn(8, 6), torch.randn(8, 2)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if epoch == ema_start_epoch:
            ema_fore = copy.deepcopy(model.fore)  # culprit: GG105
            ema_aft = copy.deepcopy(model.aft)  # culprit: GG105
        elif ema_fore is not None:
            ema_update(ema_fore, model.fore)
            ema_update(ema_aft, model.aft)
        print(f"epoch {epoch} loss {loss.item():.4f}")
    return ema_fore, ema_aft


if __name__ == "__main__":
    ema_fore, ema_aft = train()
    assert ema_fore is not None and ema_aft is not None
