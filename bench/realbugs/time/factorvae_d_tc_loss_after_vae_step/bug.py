"""FactorVAE solver: the VAE's optimizer steps, then the discriminator's TC loss is built on
D_z, computed from the encoder's z before that step, and backpropagated through the encoder.

Source: https://github.com/1Konny/FactorVAE/issues/15
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def permute_dims(z):
    B, _ = z.size()
    return torch.stack([z[torch.randperm(B), j] for j in range(z.size(1))], 1)


class FactorVAE1(nn.Module):
    def __init__(self, z_dim=6):
        super().__init__()
        self.z_dim = z_dim
        self.encode = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2 * z_dim))
        self.decode = nn.Sequential(nn.Linear(z_dim, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x):
        stats = self.encode(x)
        mu, logvar = stats[:, :self.z_dim], stats[:, self.z_dim:]
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decode(z), mu, logvar, z


class Discriminator(nn.Module):
    def __init__(self, z_dim=6):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(z_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 2))

    def forward(self, z):
        return self.net(z)


class Solver:
    def __init__(self):
        self.VAE, self.D = FactorVAE1(), Discriminator()
        self.optim_VAE = torch.optim.Adam(self.VAE.parameters(), lr=1e-3)
        self.optim_D = torch.optim.Adam(self.D.parameters(), lr=1e-3)
        self.gamma = 6.4

    def train(self, data_loader):
        for x_true1, x_true2 in data_loader:
            ones = torch.ones(x_true1.size(0), dtype=torch.long)
            zeros = torch.zeros(x_true1.size(0), dtype=torch.long)
            x_recon, mu, logvar, z = self.VAE(x_true1)
            vae_recon_loss = F.mse_loss(x_recon, x_true1)
            vae_kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
            D_z = self.D(z)
            vae_tc_loss = (D_z[:, :1] - D_z[:, 1:]).mean()
            vae_loss = vae_recon_loss + vae_kld + self.gamma * vae_tc_loss

            self.optim_VAE.zero_grad()
            vae_loss.backward(retain_graph=True)
            self.optim_VAE.step()  # culprit: GG202

            z_prime = self.VAE(x_true2)[3]
            z_pperm = permute_dims(z_prime).detach()
            D_z_pperm = self.D(z_pperm)
            D_tc_loss = 0.5 * (F.cross_entropy(D_z, zeros) + F.cross_entropy(D_z_pperm, ones))

            self.optim_D.zero_grad()
            D_tc_loss.backward()
            self.optim_D.step()


torch.manual_seed(0)
Solver().train([(torch.randn(8, 16), torch.randn(8, 16)) for _ in range(2)])
