"""MAML with `higher` in a LightningModule: the inner-loop adaptation in validation_step fails under trainer.validate

Training (manual optimization) adapts a functional copy with higher's
differentiable optimizer and backpropagates the query loss. The same
step_higher in validation_step runs inside Lightning's inference_mode, so the
support loss has no graph and diffopt.step's autograd.grad refuses it.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/20181
Shape: libraries
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl
import higher


class MAMLModel(pl.LightningModule):
    def __init__(self, inner_lr=0.1, meta_lr=1e-3, inner_steps=2, n_way=3, latent_dim=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, latent_dim), nn.ReLU())
        self.classifier = nn.Linear(latent_dim, n_way)
        self.automatic_optimization = False
        self.save_hyperparameters()

    def forward(self, x):
        return self.classifier(self.encoder(x))

    def step_higher(self, support_images, support_targets, query_images, query_targets):
        inner_opt = torch.optim.SGD(self.parameters(), lr=self.hparams.inner_lr)
        with higher.innerloop_ctx(self, inner_opt, copy_initial_weights=False) as (fmodel, diffopt):
            for _ in range(self.hparams.inner_steps):
                support_loss = F.cross_entropy(fmodel(support_images), support_targets)
                diffopt.step(support_loss)  # culprit: GG304
            query_logits = fmodel(query_images)
            query_loss = F.cross_entropy(query_logits, query_targets)
        return query_loss, query_logits

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        sx, sy, qx, qy = (t.squeeze(0) for t in batch)
        query_loss, _ = self.step_higher(sx, sy, qx, qy)
        opt.zero_grad()
        self.manual_backward(query_loss)
        opt.step()

    def validation_step(self, batch, batch_idx):
        sx, sy, qx, qy = (t.squeeze(0) for t in batch)
        query_loss, query_logits = self.step_higher(sx, sy, qx, qy)  # culprit: -
        self.log("val_loss", query_loss)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.meta_lr)


tasks = TensorDataset(torch.randn(4, 9, 6), torch.randint(0, 3, (4, 9)), torch.randn(4, 9, 6), torch.randint(0, 3, (4, 9)))
model = MAMLModel()
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1, num_sanity_val_steps=0)
trainer.fit(model, DataLoader(tasks, batch_size=1))
trainer.validate(model, DataLoader(tasks, batch_size=1), verbose=False)
