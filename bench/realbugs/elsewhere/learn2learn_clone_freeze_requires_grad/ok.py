"""MAML with the block frozen where its parameters are leaves: on the meta-model, before the
task loop; each clone then copies parameters that do not require grad, and adapt() skips
them.
"""
import copy

import torch
import torch.nn as nn


def clone_module(module):
    clone = copy.deepcopy(module)
    for (name, param), (_, cparam) in zip(module.named_parameters(), list(clone.named_parameters())):
        owner = clone
        *path, leaf = name.split('.')
        for part in path:
            owner = getattr(owner, part)
        owner._parameters[leaf] = param.clone()
    return clone


class MAML(nn.Module):
    def __init__(self, model, lr):
        super().__init__()
        self.module, self.lr = model, lr

    def forward(self, *args):
        return self.module(*args)

    def clone(self):
        return MAML(clone_module(self.module), self.lr)

    def adapt(self, loss):
        params = [p for p in self.module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, params, create_graph=True)
        updates = iter(p - self.lr * g for p, g in zip(params, grads))
        for module in self.module.modules():
            for key, p in module._parameters.items():
                if p is not None and p.requires_grad:
                    module._parameters[key] = next(updates)


class SRNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.meta_block = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU())
        self.tail = nn.Conv2d(4, 1, 3, padding=1)

    def forward(self, x):
        return self.tail(self.meta_block(x))


torch.manual_seed(0)
maml = MAML(SRNet(), lr=0.01)
for p in maml.module.meta_block.parameters():
    p.requires_grad = False
opt = torch.optim.Adam(maml.parameters(), lr=1e-3)
l1_loss = nn.L1Loss()
low_res, gt = torch.rand(2, 1, 6, 6), torch.rand(2, 1, 6, 6)
for iteration in range(2):
    opt.zero_grad()
    task_model = maml.clone()
    output = task_model(low_res)
    adaptation_loss = l1_loss(gt, output)
    task_model.adapt(adaptation_loss)
    evaluation_loss = l1_loss(gt, task_model(low_res))
    evaluation_loss.backward()
    opt.step()
