"""LitMNIST: the Jacobian in test_step works once the Trainer uses no_grad instead of inference_mode

Fix from the thread (label: working as intended): Trainer(inference_mode=False)
makes test/validate/predict run under torch.no_grad(), which the
enable_grad() block inside the model can override.

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
            jacobian_rows = [torch.autograd.grad(y, x, v, retain_graph=True, allow_unused=True)[0]
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
trainer = Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                  enable_progress_bar=False, enable_model_summary=False,
                  accelerator="cpu", devices=1, inference_mode=False)
trainer.fit(model, DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8))
trainer.test(model, DataLoader(ds, batch_size=8))
