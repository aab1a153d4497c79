"""spectral_norm module: recompute the forward after the first optimizer step

Right because the second backward runs on a graph built after opt1.step() updated
weight_orig, so the weight_orig saved by that graph is the current version; nothing
is retained across the in-place parameter update.
"""
import torch

torch.manual_seed(0)
model = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 5))
opt1 = torch.optim.SGD(model.parameters(), lr=1e-3)
opt2 = torch.optim.SGD(model.parameters(), lr=1e-3)

x = torch.randn(7, 2)
output = model(x)
loss = output.abs().mean()

# first propagation
opt1.zero_grad()
loss.backward()
opt1.step()

# second, on a fresh forward
output = model(x)
loss = output.abs().mean()
opt2.zero_grad()
loss.backward()
opt2.step()
print("both steps done")
