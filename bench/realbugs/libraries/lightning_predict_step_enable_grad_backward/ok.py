"""predict_step with gradients: the Trainer is built with inference_mode=False

With inference_mode=False Lightning wraps prediction in torch.no_grad(), which
the enable_grad() block overrides, so loss.backward() reaches x and the layer.
"""
import torch
import lightning.pytorch as pl


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def predict_step(self, batch, batch_idx):
        with torch.enable_grad():
            x = torch.randn(2, 4, requires_grad=True)
            x.requires_grad = True
            y = self.linear(x)
            loss = y.mean()
            loss.backward()
        return x.grad


dataset = torch.utils.data.TensorDataset(torch.randn(16, 4))
dataloader = torch.utils.data.DataLoader(dataset, batch_size=2)

trainer = pl.Trainer(logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, inference_mode=False)
model = Model()

grads = trainer.predict(model, dataloaders=dataloader)
assert all(g is not None for g in grads)
