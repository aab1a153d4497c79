"""406_conditional_GAN: opt_D.step() runs between D_loss.backward(retain_graph=True) and
G_loss.backward(), and G_loss was built on prob_artist1 from D before that step.

Source: https://github.com/MorvanZhou/PyTorch-Tutorial/issues/98
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(1)
BATCH_SIZE, LR_G, LR_D, N_IDEAS, ART_COMPONENTS = 16, 0.0001, 0.0001, 5, 15
PAINT_POINTS = np.vstack([np.linspace(-1, 1, ART_COMPONENTS) for _ in range(BATCH_SIZE)])


def artist_works_with_labels():
    a = np.random.uniform(1, 2, size=BATCH_SIZE)[:, np.newaxis]
    paintings = a * np.power(PAINT_POINTS, 2) + (a - 1)
    labels = (a - 1) > 0.5
    return torch.from_numpy(paintings).float(), torch.from_numpy(labels.astype(np.float32))


G = nn.Sequential(nn.Linear(N_IDEAS + 1, 32), nn.ReLU(), nn.Linear(32, ART_COMPONENTS))
D = nn.Sequential(nn.Linear(ART_COMPONENTS + 1, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=LR_D)
opt_G = torch.optim.Adam(G.parameters(), lr=LR_G)

for step in range(2):
    artist_paintings, labels = artist_works_with_labels()
    G_ideas = torch.randn(BATCH_SIZE, N_IDEAS)
    G_inputs = torch.cat((G_ideas, labels), 1)
    G_paintings = G(G_inputs)
    G_inputs = torch.cat((G_paintings, labels), 1)

    D_inputs0 = torch.cat((artist_paintings, labels), 1)
    D_inputs1 = torch.cat((G_paintings, labels), 1)
    prob_artist0 = D(D_inputs0)
    prob_artist1 = D(D_inputs1)

    D_score0 = torch.log(prob_artist0)
    D_score1 = torch.log(1. - prob_artist1)
    D_loss = - torch.mean(D_score0 + D_score1)
    G_loss = torch.mean(D_score1)

    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_D.step()  # culprit: GG202

    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()
