"""MD17 energy/force model: the Trainer is built with inference_mode=False so test_step can differentiate

With inference_mode=False Lightning evaluates under torch.no_grad(), which the
@torch.enable_grad() on pred_energy_and_force overrides, so forces come out of
autograd.grad in testing exactly as in training (the fix used by force-field
projects such as TorchMD-Net).
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl


class MD17Model(pl.LightningModule):
    def __init__(self, n_atoms=5, rho=0.9):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_atoms * 3, 32), nn.SiLU(), nn.Linear(32, 1))
        self.rho = rho

    def forward(self, pos):
        energy, force = self.pred_energy_and_force(pos)
        return energy, force

    @torch.enable_grad()
    def pred_energy_and_force(self, pos):
        pos = torch.autograd.Variable(pos, requires_grad=True)
        energy = self.net(pos.flatten(1)).squeeze(-1)
        force = -torch.autograd.grad(energy, pos, grad_outputs=torch.ones_like(energy),
                                     create_graph=True, retain_graph=True)[0]
        return energy, force

    def loss(self, batch):
        pos, energy, forces = batch
        pred_energy, pred_force = self(pos)
        return (1 - self.rho) * nn.functional.mse_loss(pred_energy, energy) + \
            self.rho * nn.functional.mse_loss(pred_force, forces)

    def training_step(self, batch, batch_idx):
        return self.loss(batch)

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self.loss(batch))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.randn(16, 5, 3), torch.randn(16), torch.randn(16, 5, 3))
model = MD17Model()
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, inference_mode=False)
trainer.fit(model, DataLoader(ds, batch_size=8))
res = trainer.test(model, DataLoader(ds, batch_size=8), verbose=False)
assert "test_loss" in res[0]
