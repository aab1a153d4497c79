"""SRGAN train loop: optimizerD.step() runs before g_loss, built on the same fake_out,
is backpropagated.

Source: https://github.com/leftthomas/SRGAN/issues/89
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn
import torch.optim as optim


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.PReLU(),
                                  nn.Conv2d(8, 3, 3, padding=1))

    def forward(self, x):
        return (torch.tanh(self.body(x)) + 1) / 2


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2),
                                 nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 1, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x).view(x.size(0)))


class GeneratorLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.mse_loss = nn.MSELoss()

    def forward(self, out_labels, out_images, target_images):
        adversarial_loss = torch.mean(1 - out_labels)
        return self.mse_loss(out_images, target_images) + 0.001 * adversarial_loss


torch.manual_seed(0)
netG, netD = Generator(), Discriminator()
generator_criterion = GeneratorLoss()
optimizerG, optimizerD = optim.Adam(netG.parameters()), optim.Adam(netD.parameters())
train_loader = [(torch.rand(2, 3, 8, 8), torch.rand(2, 3, 8, 8)) for _ in range(2)]

for epoch in range(1, 2):
    netG.train()
    netD.train()
    for data, target in train_loader:
        real_img, z = target, data
        fake_img = netG(z)

        netD.zero_grad()
        real_out = netD(real_img).mean()
        fake_out = netD(fake_img).mean()
        d_loss = 1 - real_out + fake_out
        d_loss.backward(retain_graph=True)
        optimizerD.step()  # culprit: GG202

        netG.zero_grad()
        g_loss = generator_criterion(fake_out, fake_img, real_img)
        g_loss.backward()
        optimizerG.step()
