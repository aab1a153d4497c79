"""A single orthogonal Linear layer (torch.nn.utils.parametrizations.orthogonal, the same as geotorch.orthogonal)
looks untrained while debugging: after backward, linear.weight.grad is None, because the parametrized
weight is recomputed from linear.parametrizations.weight.original and is no longer a leaf.

Source: https://github.com/lezcano/geotorch/issues/44
Shape: libraries
Symptom: the orthogonal layer's weight has no gradient
"""
import torch
from torch import nn
from torch.nn.utils.parametrizations import orthogonal


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = orthogonal(nn.Linear(n, n, bias=False))

    def forward(self, x):
        return self.linear(x)


torch.manual_seed(0)
n = 6
target = torch.linalg.qr(torch.randn(n, n)).Q  # the map to recover is orthogonal
model = Net(n)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
grad_norms = []
for step in range(10):
    x = torch.randn(32, n)
    loss = (model(x) - x @ target.T).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    grad = model.linear.weight.grad  # culprit: GG305
    grad_norms.append(None if grad is None else grad.norm().item())
    optimizer.step()
print(loss.item(), grad_norms[-1])
assert grad_norms[-1] is not None, "the orthogonal layer's weight has no gradient"
