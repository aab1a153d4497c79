"""GenB's train loop as the thread fixed it: the generator's loss is backpropagated but
optim_G steps only after the discriminator's loss is backpropagated, while the generator
still has the weights that loss saved.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class VQAModel(nn.Module):
    def __init__(self, gen=False):
        super().__init__()
        self.v_net, self.q_net = nn.Linear(8, 16), nn.Linear(6, 16)
        self.classifier = nn.Sequential(nn.ReLU(), nn.Linear(16, 5))

    def forward(self, v, q, gen=False):
        h = self.v_net(v) * self.q_net(q)
        if gen:
            h = h + torch.randn_like(h)
        return self.classifier(h)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


def train(model, genb, discriminator, train_loader):
    optim = torch.optim.Adamax(model.parameters(), lr=1e-3)
    optim_G = torch.optim.Adamax(genb.parameters(), lr=1e-3)
    optim_D = torch.optim.Adamax(discriminator.parameters(), lr=1e-3)
    for v, q, a in train_loader:
        optim.zero_grad()
        pred = model(v, q)

        optim_G.zero_grad()
        optim_D.zero_grad()
        pred_g = genb(v, q, gen=True)
        g_loss = F.binary_cross_entropy_with_logits(pred_g, a, reduction='none').mean() * a.size(1)
        vae_preds = discriminator(pred_g)
        main_preds = discriminator(pred)
        g_distill = F.kl_div(F.log_softmax(pred_g, 1), F.softmax(pred.detach(), 1), reduction='batchmean')
        dsc_loss = F.binary_cross_entropy_with_logits(vae_preds, torch.ones_like(vae_preds))
        g_loss = g_loss + dsc_loss + g_distill * 5
        g_loss.backward(retain_graph=True)

        dsc_loss = F.binary_cross_entropy_with_logits(vae_preds, torch.zeros_like(vae_preds)) + \
            F.binary_cross_entropy_with_logits(main_preds, torch.ones_like(main_preds))
        dsc_loss.backward(retain_graph=True)
        optim_G.step()
        optim_D.step()

        pred_g = genb(v, q, gen=False)
        loss = F.binary_cross_entropy_with_logits(pred - pred_g.detach(), a)
        loss.backward()
        optim.step()


torch.manual_seed(0)
loader = [(torch.randn(4, 8), torch.randn(4, 6), torch.rand(4, 5)) for _ in range(2)]
train(VQAModel(), VQAModel(), Discriminator(), loader)
