"""406_GAN: the discriminator steps before the generator's loss is backpropagated.

Source: https://github.com/MorvanZhou/PyTorch-Tutorial/issues/89
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(1)
np.random.seed(1)
BATCH_SIZE, LR_G, LR_D, N_IDEAS, ART_COMPONENTS = 8, 0.0001, 0.0001, 5, 15
PAINT_POINTS = np.vstack([np.linspace(-1, 1, ART_COMPONENTS) for _ in range(BATCH_SIZE)])


def artist_works():
    a = np.random.uniform(1, 2, size=BATCH_SIZE)[:, np.newaxis]
    paintings = a * np.power(PAINT_POINTS, 2) + (a - 1)
    return torch.from_numpy(paintings).float()


G = nn.Sequential(nn.Linear(N_IDEAS, 128), nn.ReLU(), nn.Linear(128, ART_COMPONENTS))
D = nn.Sequential(nn.Linear(ART_COMPONENTS, 128), nn.ReLU(), nn.Linear(128, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=LR_D)
opt_G = torch.optim.Adam(G.parameters(), lr=LR_G)

for step in range(3):
    artist_paintings = artist_works()
    G_ideas = torch.randn(BATCH_SIZE, N_IDEAS)
    G_paintings = G(G_ideas)

    prob_artist0 = D(artist_paintings)
    prob_artist1 = D(G_paintings)

    D_loss = -torch.mean(torch.log(prob_artist0) + torch.log(1. - prob_artist1))
    G_loss = torch.mean(torch.log(1. - prob_artist1))

    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)  # reusing computational graph
    opt_D.step()  # culprit: GG202
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()
