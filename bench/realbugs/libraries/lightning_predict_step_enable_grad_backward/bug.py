"""torch.enable_grad() inside predict_step does not bring gradients back: loss.backward() fails

trainer.predict runs predict_step under torch.inference_mode(). enable_grad()
only flips grad mode, it does not leave inference mode, so neither the fresh
x (requires_grad=True) nor self.linear builds a graph and loss has no grad_fn.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/15925
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
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
            loss.backward()  # culprit: GG304
        return x.grad


dataset = torch.utils.data.TensorDataset(torch.randn(16, 4))
dataloader = torch.utils.data.DataLoader(dataset, batch_size=2)

trainer = pl.Trainer(logger=False, enable_checkpointing=False,  # culprit: -
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
model = Model()

trainer.predict(model, dataloaders=dataloader)
