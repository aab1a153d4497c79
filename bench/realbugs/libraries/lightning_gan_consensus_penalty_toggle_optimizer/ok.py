"""GAN with a gradient-norm regularizer: no toggle_optimizer, the discriminator keeps requires_grad

In manual optimization (the route suggested in the thread) the generator step
can skip toggle_optimizer: the penalty differentiates through both players,
opt_g only steps the generator, and the discriminator's stray gradients are
cleared by opt_d.zero_grad() before its own backward.
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as pl


class GAN(pl.LightningModule):
    def __init__(self, latent_dim=4, gamma=0.1):
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(latent_dim, 16), nn.ReLU(), nn.Linear(16, 8))
        self.discriminator = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.latent_dim, self.gamma = latent_dim, gamma
        self.automatic_optimization = False

    def grad_norm_penalty(self, loss):
        params = list(self.generator.parameters()) + list(self.discriminator.parameters())
        grads = torch.autograd.grad(loss, params, create_graph=True)
        return sum(g.pow(2).sum() for g in grads)

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.size(0), self.latent_dim)
        bce = nn.functional.binary_cross_entropy_with_logits

        fake = self.generator(z)
        g_loss = bce(self.discriminator(fake), torch.ones(real.size(0), 1))
        g_loss = g_loss + self.gamma * self.grad_norm_penalty(g_loss)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()

        self.toggle_optimizer(opt_d)
        d_loss = bce(self.discriminator(real), torch.ones(real.size(0), 1)) + \
            bce(self.discriminator(fake.detach()), torch.zeros(real.size(0), 1))
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

    def configure_optimizers(self):
        return (torch.optim.Adam(self.generator.parameters(), lr=2e-4),
                torch.optim.Adam(self.discriminator.parameters(), lr=2e-4))


ds = TensorDataset(torch.randn(16, 8))
trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     accelerator="cpu", devices=1)
trainer.fit(GAN(), DataLoader(ds, batch_size=8))
