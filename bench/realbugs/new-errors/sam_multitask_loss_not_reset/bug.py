"""SAM with a multi-task loss: the second pass keeps adding the task losses to the same
`loss` accumulator as the first, so its backward also runs through the first forward's
graph, which the first backward freed (and first_step has since moved the weights).

Source: https://github.com/davda54/sam/issues/10
Shape: new-errors
Symptom: Trying to backward through the graph a second time
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = torch.norm(torch.stack([p.grad.norm(p=2) for g in self.param_groups for p in g["params"]
                                            if p.grad is not None]))
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.state[p]["e_w"] = e_w = p.grad * group["rho"] / (grad_norm + 1e-12)
                    p.add_(e_w)
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


def get_loss(output, target, t):
    loss_t = F.binary_cross_entropy_with_logits(output[:, t], target[:, t])
    acc_t = ((output[:, t] > 0).float() == target[:, t]).float().mean()
    return loss_t, acc_t


torch.manual_seed(0)
num_tasks = 3
model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, num_tasks))
optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.1)
image, target = torch.randn(4, 5), torch.randint(0, 2, (4, num_tasks)).float()
loss_sum, acc_sum = [0.0] * num_tasks, [0.0] * num_tasks

output = model(image)
loss = 0
for t in range(num_tasks):
    loss_t, acc_t = get_loss(output, target, t)
    loss += loss_t
    loss_sum[t] += loss_t.item()
    acc_sum[t] += acc_t.item()
optimizer.zero_grad()
loss.backward()
optimizer.first_step(zero_grad=True)  # culprit: GG202
output = model(image)
for t in range(num_tasks):
    loss_t, acc_t = get_loss(output, target, t)
    loss += loss_t  # culprit: -
    loss_sum[t] += loss_t.item()
    acc_sum[t] += acc_t.item()
loss.backward()  # culprit: GG207
optimizer.second_step(zero_grad=True)
