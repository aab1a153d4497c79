"""The same loop with the shared term recomputed in each iteration (`t @ (x + t @ a)`, the
shape the thread reports working), so every backward walks a graph of its own.
"""
import torch

measure = torch.nn.MSELoss()

x = torch.tensor([1, 0], dtype=torch.float64)
t = torch.eye(2, dtype=torch.float64, requires_grad=True)
a = torch.ones(2, dtype=torch.float64, requires_grad=True)
optimizer = torch.optim.SGD([t, a], lr=0.01)

for __ in range(2):
    y = t @ a
    x_out = t @ (x + y)
    loss = measure(x_out, x)
    optimizer.zero_grad()
    loss.backward()
