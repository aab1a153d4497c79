"""A spiking CNN built from Leaky neurons with init_hidden=True: each neuron keeps its
membrane potential on self, and the model's forward never resets it, so the next batch
starts from the last batch's membrane, whose graph backward already freed.

Source: https://github.com/jeshraghian/snntorch/issues/250
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn as nn


class Leaky(nn.Module):
    def __init__(self, beta, threshold=1.0, init_hidden=False, output=False):
        super().__init__()
        self.beta, self.threshold = beta, threshold
        self.init_hidden, self.output = init_hidden, output
        self.mem = torch.zeros(1)

    def reset_hidden(self):
        self.mem = torch.zeros(1)

    def forward(self, input_):
        self.mem = self.beta * self.mem + input_
        spk = torch.sigmoid(5 * (self.mem - self.threshold))  # surrogate spike
        return (spk, self.mem) if self.output else spk


def reset(net):
    for module in net.modules():
        if isinstance(module, Leaky) and module.init_hidden:
            module.reset_hidden()


class Net(nn.Module):
    def __init__(self, num_steps=4):
        super().__init__()
        self.num_steps = num_steps
        self.net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), Leaky(0.9, init_hidden=True),
                                 nn.Flatten(), nn.Linear(4 * 3 * 3, 3), Leaky(0.9, init_hidden=True, output=True))

    def forward(self, x):
        mem_rec, spk_rec = [], []
        for step in range(self.num_steps):
            spk_out, mem_out = self.net(x)
            spk_rec.append(spk_out)
            mem_rec.append(mem_out)
        return torch.stack(spk_rec), torch.stack(mem_rec)


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=2e-2)
train_loader = [(torch.randn(2, 1, 8, 8), torch.randint(0, 3, (2,))) for _ in range(2)]
for data, targets in train_loader:
    spk_rec, mem_rec = net(data)
    loss_val = sum(nn.functional.cross_entropy(mem_rec[step], targets) for step in range(net.num_steps))
    optimizer.zero_grad()
    loss_val.backward()  # culprit: GG207
    optimizer.step()
