"""A term y = t @ a is computed once before the loop and reused by every iteration's loss;
the first backward frees y's part of the graph, the second iteration's backward needs it.

Source: https://discuss.pytorch.org/t/backpropagation-graph-is-reused-while-it-shouldnt/24554
Shape: time
Symptom: Trying to backward through the graph a second time
"""
import torch

measure = torch.nn.MSELoss()

x = torch.tensor([1, 0], dtype=torch.float64)
t = torch.eye(2, dtype=torch.float64, requires_grad=True)
a = torch.ones(2, dtype=torch.float64, requires_grad=True)
optimizer = torch.optim.SGD([t, a], lr=0.01)
y = t @ a  # culprit: -

for __ in range(2):
    x_out = t @ (x + y)
    loss = measure(x_out, x)
    optimizer.zero_grad()
    loss.backward()  # culprit: GG207
