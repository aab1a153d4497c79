"""Probe of lightning.pytorch: automatic optimization under ``fit`` (with its sanity check
and validation), then ``validate``, ``test`` and ``predict``, in the default inference
mode. Each hook and each optimizer call says what autograd sees there."""
import json

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled(),
                 inference=torch.is_inference_mode_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


class RecordingSGD(torch.optim.SGD):
    def zero_grad(self, set_to_none=True):
        record("zero_grad")
        super().zero_grad(set_to_none)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        record("step", grads=[p.grad is not None for p in self.param_groups[0]["params"]])
        super().step()
        return loss


class Probe(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 1)

    def configure_optimizers(self):
        return RecordingSGD(self.parameters(), lr=0.1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = ((self.layer(x) - y) ** 2).mean()
        record("training_step", training=self.training, loss_requires_grad=loss.requires_grad)
        loss.register_hook(lambda grad: record("backward"))
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        out = self.layer(x)
        record("validation_step", training=self.training, out_requires_grad=out.requires_grad)

    def test_step(self, batch, batch_idx):
        x, y = batch
        out = self.layer(x)
        record("test_step", training=self.training, out_requires_grad=out.requires_grad)

    def predict_step(self, batch, batch_idx):
        x, y = batch
        out = self.layer(x)
        record("predict_step", training=self.training, out_requires_grad=out.requires_grad)
        return out


torch.manual_seed(0)
data = TensorDataset(torch.randn(4, 3), torch.randn(4, 1))
model = Probe()
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, num_sanity_val_steps=1)
trainer.fit(model, DataLoader(data, batch_size=2), DataLoader(data, batch_size=4))
record("after_fit", training=model.training)
trainer.validate(model, DataLoader(data, batch_size=4), verbose=False)
record("after_validate", training=model.training)
trainer.test(model, DataLoader(data, batch_size=4), verbose=False)
record("after_test", training=model.training)
predictions = trainer.predict(model, DataLoader(data, batch_size=4))
record("after_predict", training=model.training, predictions=len(predictions),
       prediction_requires_grad=predictions[0].requires_grad)
