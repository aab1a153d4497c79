"""DeepXDE's PyTorch backend: the per-term losses of a PINN (PDE residual, boundary)
are gathered with the backend's as_tensor(), i.e. torch.as_tensor of a list of tensors,
which copies their values into a new tensor without grad_fn; backward then has no graph.

Source: https://github.com/lululxvi/deepxde/pull/1318
Shape: new-errors
Symptom: element 0 of tensors does not require grad and does not have a grad_fn
"""
import torch


def as_tensor(data, dtype=None):
    if isinstance(data, torch.Tensor):
        if dtype is None or data.dtype == dtype:
            return data
        return data.type(dtype=dtype)
    return torch.as_tensor(data, dtype=dtype)  # culprit: -


class FNN(torch.nn.Module):
    def __init__(self, layer_sizes):
        super().__init__()
        self.linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(layer_sizes, layer_sizes[1:]))

    def forward(self, x):
        for linear in self.linears[:-1]:
            x = torch.tanh(linear(x))
        return self.linears[-1](x)


def pde(x, y):
    dy_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    dy_xx = torch.autograd.grad(dy_x, x, torch.ones_like(dy_x), create_graph=True)[0]
    return -dy_xx - torch.pi ** 2 * torch.sin(torch.pi * x)


def outputs_losses(net, x_domain, x_boundary):
    x_domain.requires_grad_(True)
    residual = pde(x_domain, net(x_domain))
    losses = [residual.pow(2).mean(), net(x_boundary).pow(2).mean()]
    return as_tensor(losses)


torch.manual_seed(0)
net = FNN([1, 16, 16, 1])
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
x_domain, x_boundary = torch.rand(16, 1) * 2 - 1, torch.tensor([[-1.0], [1.0]])
loss_weights = torch.tensor([1.0, 10.0])
for step in range(2):
    losses = outputs_losses(net, x_domain, x_boundary)
    total_loss = torch.sum(losses * loss_weights)
    optimizer.zero_grad()
    total_loss.backward()  # culprit: GG304
    optimizer.step()
