"""EdgeConnect's EdgeModel.backward(): the discriminator's optimizer steps before the
generator's loss, which ran through the discriminator, is backpropagated.

Source: https://github.com/knazeri/edge-connect/issues/188
Shape: time
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch
import torch.nn as nn
import torch.optim as optim


class BaseModel(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.iteration = 0


class EdgeModel(BaseModel):
    def __init__(self):
        super().__init__('EdgeModel')
        self.generator = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
        self.discriminator = nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3))
        self.adversarial_loss = nn.BCEWithLogitsLoss()
        self.gen_optimizer = optim.Adam(self.generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
        self.dis_optimizer = optim.Adam(self.discriminator.parameters(), lr=1e-5, betas=(0.0, 0.9))

    def forward(self, images, edges, masks):
        edges_masked = edges * (1 - masks)
        inputs = torch.cat((images * (1 - masks) + masks, edges_masked, masks), dim=1)
        return torch.sigmoid(self.generator(inputs))

    def process(self, images, edges, masks):
        self.iteration += 1
        self.gen_optimizer.zero_grad()
        self.dis_optimizer.zero_grad()
        outputs = self(images, edges, masks)
        dis_real = self.discriminator(torch.cat((images, edges), dim=1))
        dis_fake = self.discriminator(torch.cat((images, outputs.detach()), dim=1))
        dis_loss = (self.adversarial_loss(dis_real, torch.ones_like(dis_real)) +
                    self.adversarial_loss(dis_fake, torch.zeros_like(dis_fake))) / 2
        gen_fake = self.discriminator(torch.cat((images, outputs), dim=1))
        gen_loss = self.adversarial_loss(gen_fake, torch.ones_like(gen_fake))
        return outputs, gen_loss, dis_loss

    def backward(self, gen_loss=None, dis_loss=None):
        if dis_loss is not None:
            dis_loss.backward()
        self.dis_optimizer.step()  # culprit: GG202
        if gen_loss is not None:
            gen_loss.backward()
        self.gen_optimizer.step()


torch.manual_seed(0)
edge_model = EdgeModel()
for _ in range(2):
    images, edges = torch.rand(2, 1, 8, 8), (torch.rand(2, 1, 8, 8) > 0.8).float()
    masks = (torch.rand(2, 1, 8, 8) > 0.5).float()
    outputs, gen_loss, dis_loss = edge_model.process(images, edges, masks)
    edge_model.backward(gen_loss, dis_loss)
