"""SinGAN's train_single_scale with the generator's output recomputed in each generator
step, so every backward runs through a graph of the current weights.
"""
import torch
import torch.nn as nn
import torch.optim as optim


class Opt:
    nc_z, nzx, nzy, Dsteps, Gsteps, alpha, noise_amp = 3, 8, 8, 3, 3, 10, 0.1
    lr_d = lr_g = 5e-4
    beta1 = 0.5


def generate_noise(size):
    return torch.randn(1, *size)


torch.manual_seed(0)
opt = Opt()
netD = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, padding=1))
netG = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())
optimizerD = optim.Adam(netD.parameters(), lr=opt.lr_d, betas=(opt.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=opt.lr_g, betas=(opt.beta1, 0.999))
real = torch.rand(1, 3, opt.nzx, opt.nzy) * 2 - 1
z_opt, prev, z_prev = generate_noise([opt.nc_z, opt.nzx, opt.nzy]), torch.zeros_like(real), torch.zeros_like(real)

for epoch in range(2):
    noise = opt.noise_amp * generate_noise([opt.nc_z, opt.nzx, opt.nzy]) + prev
    # (1) Update D network: maximize D(x) + D(G(z))
    for j in range(opt.Dsteps):
        netD.zero_grad()
        errD_real = -netD(real).mean()
        errD_real.backward(retain_graph=True)
        fake = netG(noise.detach())
        errD_fake = netD(fake.detach()).mean()
        errD_fake.backward(retain_graph=True)
        optimizerD.step()
    # (2) Update G network: maximize D(G(z))
    for j in range(opt.Gsteps):
        netG.zero_grad()
        fake = netG(noise.detach())
        output = netD(fake)
        errG = -output.mean()
        errG.backward(retain_graph=True)
        rec_loss = opt.alpha * nn.MSELoss()(netG(opt.noise_amp * z_opt + z_prev), real)
        rec_loss.backward(retain_graph=True)
        optimizerG.step()
