"""The nudge is an update of the parameter, so it runs under torch.no_grad().

(The PR proposes `.data`; the book now uses torch.no_grad().)
"""
import torch


def init_params(size, std=1.0):
    return (torch.randn(size) * std).requires_grad_()


def linear1(xb):
    return xb @ weights + bias


def batch_accuracy(xb, yb):
    preds = xb.sigmoid()
    correct = (preds > 0.5) == yb
    return correct.float().mean()


torch.manual_seed(0)
train_x = torch.randn(20, 28 * 28)
train_y = (torch.rand(20, 1) > 0.5).float()
weights = init_params((28 * 28, 1))
bias = init_params(1)
preds = linear1(train_x)
corrects = (preds > 0.0).float() == train_y
print(corrects.float().mean().item())
with torch.no_grad():
    weights[0] *= 1.0001
preds = linear1(train_x)
print(((preds > 0.0).float() == train_y).float().mean().item())
print(batch_accuracy(linear1(train_x), train_y).item())
