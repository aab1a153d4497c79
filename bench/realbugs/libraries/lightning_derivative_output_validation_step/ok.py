"""A network whose output is its own input-derivative: validation_step turns gradients back on

The workaround from the report: torch.set_grad_enabled(True) at the beginning
of validation_step. During trainer.fit the validation loop uses torch.no_grad()
(restored when the loop ends), so re-enabling grad lets forward's
autograd.grad see a graph; the logged loss is detached.
"""
import torch
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl


class Feedforward(torch.nn.Module):
    def __init__(self, input_size, hidden_size):
        super(Feedforward, self).__init__()
        self.fc1 = torch.nn.Linear(input_size, hidden_size)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(hidden_size, 1)

    def forward(self, x):
        hidden = self.fc1(x)
        relu = self.relu(hidden)
        output = self.fc2(relu)
        output = output.sum()
        output = torch.autograd.grad(outputs=output, inputs=x, retain_graph=True, create_graph=True)
        return output[0]


class LitModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.model = Feedforward(3, 16)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x.requires_grad_(True)
        return torch.nn.functional.mse_loss(self.model(x), y)

    def validation_step(self, batch, batch_idx):
        torch.set_grad_enabled(True)
        x, y = batch
        x.requires_grad_(True)
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        self.log("val_loss", loss.detach())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.rand((10, 3)), torch.rand((10, 3)))
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(LitModel(), DataLoader(ds, batch_size=5), DataLoader(ds, batch_size=5))
