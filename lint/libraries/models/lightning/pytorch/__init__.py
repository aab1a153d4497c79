"""A model of ``lightning.pytorch`` for gradguard: what Lightning does to autograd around
the user's hooks. Checked against Lightning 2.6.6 (``tests/library_probes/lightning_*``).

- ``Trainer.fit`` builds the optimizers from ``configure_optimizers``, runs the sanity
  check (``validation_step`` on up to ``num_sanity_val_steps`` batches, in evaluation
  mode), then per batch in train mode: with automatic optimization, the closure
  (``training_step``, ``optimizer_zero_grad``, ``backward``) inside ``optimizer_step``,
  which steps after it; with manual optimization, ``training_step`` alone (the user calls
  ``manual_backward`` and steps). Validation follows each epoch. Validation inside
  ``fit`` (the sanity check too) runs under ``torch.no_grad()``, never inference mode.
- ``validate``, ``test`` and ``predict`` put the module in eval mode and run their hook
  under ``torch.inference_mode()`` (``torch.no_grad()`` with ``Trainer(inference_mode=
  False)``), then put it back in train mode (the mode it was in: a fresh module's).
- ``LightningModule.manual_backward``/``backward`` call ``loss.backward()``;
  ``optimizers()`` hands back what ``configure_optimizers`` built (one, or a list).

Left out (unknown to the engine, as without a model): loggers, callbacks, schedulers,
precision plugins, strategies and devices, ``toggle_optimizer``, gradient accumulation.
"""

import torch
import torch.nn as nn


class LightningModule(nn.Module):
    automatic_optimization = True

    def optimizers(self, use_pl_optimizer=True):
        optimizers = self._gradguard_optimizers
        if len(optimizers) == 1:
            return optimizers[0]
        return optimizers

    # Lightning passes ``*args, **kwargs`` on to ``loss.backward``: spelled out here, so
    # that what the user passes (``retain_graph=True``, or nothing) is known
    def manual_backward(self, loss, gradient=None, retain_graph=None, create_graph=False,
                        inputs=None):
        loss.backward(gradient=gradient, retain_graph=retain_graph,
                      create_graph=create_graph, inputs=inputs)

    def backward(self, loss, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None):
        loss.backward(gradient=gradient, retain_graph=retain_graph,
                      create_graph=create_graph, inputs=inputs)

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        if optimizer_closure is not None:
            optimizer_closure()  # what optimizer.step(closure) runs before it steps
        optimizer.step()

    def optimizer_zero_grad(self, epoch, batch_idx, optimizer):
        optimizer.zero_grad()

    def log(self, *args, **kwargs):
        return None

    def log_dict(self, *args, **kwargs):
        return None


class LightningDataModule:
    pass


def _optimizers_of(configured):
    """The optimizers ``configure_optimizers`` returned: one, a list or tuple of them, or a
    dict (``{"optimizer": opt, "lr_scheduler": ...}``)."""
    if isinstance(configured, torch.optim.Optimizer):
        return [configured]
    if isinstance(configured, dict):
        return [configured["optimizer"]]
    return list(configured)


class Trainer:
    def __init__(self, *args, max_epochs=None, inference_mode=True, num_sanity_val_steps=2,
                 **kwargs):
        self.max_epochs = 1000 if max_epochs is None else max_epochs
        self.inference_mode = inference_mode
        self.num_sanity_val_steps = num_sanity_val_steps

    def fit(self, model, train_dataloaders=None, val_dataloaders=None, datamodule=None,
            ckpt_path=None):
        optimizers = _optimizers_of(model.configure_optimizers())
        model._gradguard_optimizers = optimizers
        if val_dataloaders is not None and self.num_sanity_val_steps:
            self._validation_during_fit(model, val_dataloaders)
        model.train()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloaders):
                if model.automatic_optimization:
                    optimizer = optimizers[0]

                    def closure():
                        output = model.training_step(batch, batch_idx)
                        loss = output["loss"] if isinstance(output, dict) else output
                        model.optimizer_zero_grad(epoch, batch_idx, optimizer)
                        model.backward(loss)
                        return loss

                    model.optimizer_step(epoch, batch_idx, optimizer, closure)
                else:
                    model.training_step(batch, batch_idx)
            if val_dataloaders is not None:
                self._validation_during_fit(model, val_dataloaders)

    def _validation_during_fit(self, model, dataloaders):
        model.eval()  # under no_grad, whatever inference_mode says: fit trains after it
        with torch.no_grad():
            for batch_idx, batch in enumerate(dataloaders):
                model.validation_step(batch, batch_idx)
        model.train()

    def validate(self, model, dataloaders=None, ckpt_path=None, verbose=True, datamodule=None):
        model.eval()
        if self.inference_mode:
            with torch.inference_mode():
                for batch_idx, batch in enumerate(dataloaders):
                    model.validation_step(batch, batch_idx)
        else:
            with torch.no_grad():
                for batch_idx, batch in enumerate(dataloaders):
                    model.validation_step(batch, batch_idx)
        model.train()

    def test(self, model, dataloaders=None, ckpt_path=None, verbose=True, datamodule=None):
        model.eval()
        if self.inference_mode:
            with torch.inference_mode():
                for batch_idx, batch in enumerate(dataloaders):
                    model.test_step(batch, batch_idx)
        else:
            with torch.no_grad():
                for batch_idx, batch in enumerate(dataloaders):
                    model.test_step(batch, batch_idx)
        model.train()

    def predict(self, model, dataloaders=None, datamodule=None, return_predictions=None,
                ckpt_path=None):
        model.eval()
        predictions = []
        if self.inference_mode:
            with torch.inference_mode():
                for batch_idx, batch in enumerate(dataloaders):
                    predictions.append(model.predict_step(batch, batch_idx))
        else:
            with torch.no_grad():
                for batch_idx, batch in enumerate(dataloaders):
                    predictions.append(model.predict_step(batch, batch_idx))
        model.train()
        return predictions
