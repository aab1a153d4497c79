"""SAM used as its README says: the second pass backpropagates the loss of a fresh
forward at the perturbed weights.
"""
import torch
import torch.nn as nn


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = torch.norm(torch.stack([p.grad.norm(p=2) for group in self.param_groups
                                            for p in group["params"] if p.grad is not None]))
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale
                p.add_(e_w)
                self.state[p]["e_w"] = e_w
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()


torch.manual_seed(0)
models = {"backbone": nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))}
optimizers = {"backbone": SAM(models["backbone"].parameters(), torch.optim.SGD, lr=0.1)}
criterion = nn.CrossEntropyLoss()
dataloader = [(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(2)]

for inputs, labels in dataloader:
    optimizers["backbone"].zero_grad()
    loss = criterion(models["backbone"](inputs), labels)
    loss.backward()
    optimizers["backbone"].first_step(zero_grad=True)

    loss = criterion(models["backbone"](inputs), labels)
    loss.backward()
    optimizers["backbone"].second_step(zero_grad=True)
