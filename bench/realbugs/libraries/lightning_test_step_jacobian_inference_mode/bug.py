"""LitMNIST: a Jacobian built with torch.autograd.grad inside test_step fails even under enable_grad

The model needs the Jacobian of a small map as an extra input. It works in
training_step, and `with torch.enable_grad()` rescues validation_step (which
runs under no_grad during fit), but trainer.test() runs test_step under
torch.inference_mode(), which enable_grad() cannot leave: y has no grad_fn.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19910
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
"""
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset
from lightning import LightningModule, Trainer


class LitMNIST(LightningModule):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(8 + 5 * 5, 10)

    def jacobian_feature(self, batch_size):
        with torch.enable_grad():
            N = 5
            f = lambda x: x ** 2
            x = torch.randn(N, requires_grad=True)
            y = f(x)
            I_N = torch.eye(N)
            jacobian_rows = [torch.autograd.grad(y, x, v, retain_graph=True, allow_unused=True)[0]  # culprit: GG304
                             for v in I_N.unbind()]
            jacobian = torch.stack(jacobian_rows)
        return jacobian.reshape(1, -1).expand(batch_size, -1)

    def forward(self, x):
        x = torch.cat([x, self.jacobian_feature(x.size(0))], dim=1)
        return F.log_softmax(self.layer_1(x), dim=1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.nll_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.nll_loss(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.nll_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.randn(16, 8), torch.randint(0, 10, (16,)))
model = LitMNIST()
trainer = Trainer(max_epochs=1, logger=False, enable_checkpointing=False,  # culprit: -
                  enable_progress_bar=False, enable_model_summary=False,
                  accelerator="cpu", devices=1)
trainer.fit(model, DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8))
trainer.test(model, DataLoader(ds, batch_size=8))
