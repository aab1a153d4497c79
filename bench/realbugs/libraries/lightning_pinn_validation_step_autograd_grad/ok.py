"""PINN for the cosine: validation_step re-enables grad mode around the forward and autograd.grad

During trainer.fit, Lightning's validation runs under torch.no_grad() (not
inference_mode), so a local `with torch.enable_grad():` restores the graph from
x to u_hat and the physics loss can be evaluated on the validation data.
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
        dydx = torch.autograd.grad(u_hat, x, grad_outputs=torch.ones_like(u_hat), create_graph=True)[0]
        return ((-torch.sin(x) - dydx) ** 2).mean()

    def training_step(self, batch, batch_idx):
        x, t = batch
        x = x.requires_grad_(True)
        u_hat = self.forward(x, t)
        return {"loss": self.physics_loss(x, u_hat)}

    def validation_step(self, batch, batch_idx):
        x, t = batch
        with torch.enable_grad():
            x = x.requires_grad_(True)
            u_hat = self.forward(x, t)
            physics_loss = self.physics_loss(x, u_hat).detach()
        self.log("val_loss", physics_loss)
        return {"loss": physics_loss}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.rand(32, 1) * 6.28, torch.rand(32, 1))
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, num_sanity_val_steps=0)
trainer.fit(CosinePINN(), DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8))
