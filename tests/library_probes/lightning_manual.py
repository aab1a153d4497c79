"""Probe of lightning.pytorch: manual optimization with two optimizers (a GAN's shape:
``self.optimizers()``, ``manual_backward``, each optimizer stepped by the user), and the
evaluation hooks with ``Trainer(inference_mode=False)``, where ``torch.enable_grad()``
inside a hook turns grad back on."""
import json

import pytorch_lightning as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled(),
                 inference=torch.is_inference_mode_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


class RecordingAdam(torch.optim.Adam):
    def __init__(self, params, name):
        super().__init__(params, lr=1e-3)
        self.name = name

    def zero_grad(self, set_to_none=True):
        record("zero_grad", optimizer=self.name)
        super().zero_grad(set_to_none)

    def step(self, closure=None):
        if closure is not None:
            with torch.enable_grad():
                closure()
        record("step", optimizer=self.name,
               grads=[p.grad is not None for p in self.param_groups[0]["params"]])
        super().step()


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.generator = nn.Linear(2, 3)
        self.discriminator = nn.Linear(3, 1)

    def configure_optimizers(self):
        return [RecordingAdam(self.generator.parameters(), "g"),
                RecordingAdam(self.discriminator.parameters(), "d")]

    def training_step(self, batch, batch_idx):
        real, noise = batch
        opt_g, opt_d = self.optimizers()
        fake = self.generator(noise)
        g_loss = -self.discriminator(fake).mean()
        record("training_step", training=self.training, g_loss_requires_grad=g_loss.requires_grad)
        opt_g.zero_grad()
        g_loss.register_hook(lambda grad: record("backward", loss="g"))
        self.manual_backward(g_loss)
        opt_g.step()
        d_loss = self.discriminator(fake.detach()).mean() - self.discriminator(real).mean()
        opt_d.zero_grad()
        d_loss.register_hook(lambda grad: record("backward", loss="d"))
        self.manual_backward(d_loss)
        opt_d.step()

    def test_step(self, batch, batch_idx):
        real, noise = batch
        plain = self.generator(noise)
        with torch.enable_grad():
            enabled = self.generator(noise)
        record("test_step", training=self.training, out_requires_grad=plain.requires_grad,
               enabled_requires_grad=enabled.requires_grad)


torch.manual_seed(0)
data = TensorDataset(torch.randn(4, 3), torch.randn(4, 2))
model = GAN()
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, inference_mode=False)
trainer.fit(model, DataLoader(data, batch_size=2))
record("after_fit", training=model.training)
trainer.test(model, DataLoader(data, batch_size=4), verbose=False)
record("after_test", training=model.training)
