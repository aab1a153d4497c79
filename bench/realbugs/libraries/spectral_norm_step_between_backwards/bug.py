"""spectral_norm module: second backward of a kept loss fails after the first optimizer step

GAN-style reuse of one forward for two optimizer steps. nn.utils.spectral_norm
computes weight = weight_orig / sigma in a forward pre-hook and the graph saves
weight_orig for backward; opt1.step() updates weight_orig in place, so the second
loss.backward() through the retained graph finds a saved tensor at a newer version.

Source: https://github.com/pytorch/pytorch/issues/55368
Shape: libraries
Symptom: one of the variables needed for gradient computation has been modified by an inplace operation
"""
import torch

torch.manual_seed(0)
model = torch.nn.utils.spectral_norm(torch.nn.Linear(2, 5))
opt1 = torch.optim.SGD(model.parameters(), lr=1e-3)
opt2 = torch.optim.SGD(model.parameters(), lr=1e-3)

output = model(torch.randn(7, 2))
loss = output.abs().mean()

# first propagation
opt1.zero_grad()
loss.backward(retain_graph=True)
opt1.step()  # culprit: GG202

# second
opt2.zero_grad()
loss.backward()
opt2.step()
print("both steps done")
