"""PINN for the cosine: torch.autograd.grad(u_hat, x) in validation_step fails because Lightning runs validation under no_grad

The physics loss needs du/dx, so the network output must carry a graph back to
the input x. training_step gets one, but during trainer.fit Lightning runs
validation_step inside torch.no_grad(): u_hat has no grad_fn even though x
requires grad.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/15765
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl


class CosinePINN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))

    def physics_loss(self, x, u_hat):
        dydx = torch.autograd.grad(u_hat, x, grad_outputs=torch.ones_like(u_hat), create_graph=True)[0]  # culprit: GG304
        return ((-torch.sin(x) - dydx) ** 2).mean()

    def training_step(self, batch, batch_idx):
        x, t = batch
        x = x.requires_grad_(True)
        u_hat = self.forward(x, t)
        return {"loss": self.physics_loss(x, u_hat)}

    def validation_step(self, batch, batch_idx):
        x, t = batch
        x = x.requires_grad_(True)
        u_hat = self.forward(x, t)  # culprit: -
        physics_loss = self.physics_loss(x, u_hat)
        self.log("val_loss", physics_loss)
        return {"loss": physics_loss}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.rand(32, 1) * 6.28, torch.rand(32, 1))
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, num_sanity_val_steps=0)
trainer.fit(CosinePINN(), DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8))
