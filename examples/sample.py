"""gradguard's bundled sample: in-place bugs from the seed posts, and their fixes.

Run it under torch and it stops at line 11; lint it and gradguard points at every line
that would stop it.
"""
import torch
import torch.nn as nn

x = torch.ones(1, requires_grad=True)
y = 2 * x
x *= 100  # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation
x.data *= 100  # no error, but .data bypasses autograd's checks (GG302)

w = torch.FloatTensor(10)
w.requires_grad = True
w.normal_()  # the same error: w became a leaf that requires grad on the line above

conv = nn.Conv2d(3, 8, 3)
conv.bias[:4] = 0  # a write through a view of the leaf conv.bias
with torch.no_grad():
    conv.bias[:4] = 0  # fine: not recorded

model = nn.Linear(4, 2)
model(torch.randn(3, 4)).sum().backward()
for p in model.parameters():
    p -= 0.1 * p.grad  # a manual SGD step outside torch.no_grad()

# A tensor saved for backward, changed in place: torch only complains at backward().
a = torch.FloatTensor([[1.0, 2.0]])
w1 = torch.FloatTensor([[2.0], [1.0]]).requires_grad_()
w2 = torch.FloatTensor([3.0]).requires_grad_()
d = torch.matmul(a, w1)
f = torch.matmul(d, w2)  # matmul saves d to compute w2's gradient
d[:] = 1  # so this write makes f.backward() fail
f.backward()
