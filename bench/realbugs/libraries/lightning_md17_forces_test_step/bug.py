"""MD17 energy/force model: forces = -dE/dpos under @torch.enable_grad() still fail in trainer.test

The network predicts an energy and gets forces as the negative gradient with
respect to atom positions, so the forward itself needs autograd. It trains,
but trainer.test runs test_step inside torch.inference_mode(); the
@torch.enable_grad() decorator cannot leave it, the energy has no graph.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17653
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
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
        force = -torch.autograd.grad(energy, pos, grad_outputs=torch.ones_like(energy),  # culprit: GG304
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
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,  # culprit: -
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(model, DataLoader(ds, batch_size=8))
trainer.test(model, DataLoader(ds, batch_size=8), verbose=False)
