"""LeNet with random_unstructured pruning: read the gradient from conv1.weight_orig

Right because torch.nn.utils.prune keeps the trainable leaf as conv1.weight_orig (the
optimizer updates it) and recomputes conv1.weight = weight_orig * weight_mask before
each forward; backward fills weight_orig.grad, already multiplied by the mask.
"""
import torch
from torch import nn
import torch.nn.utils.prune as prune


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 2, 3)
        self.conv2 = nn.Conv2d(2, 1, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return x


torch.manual_seed(0)
model = LeNet()
prune.random_unstructured(model.conv1, name="weight", amount=0.3)

lossfn = nn.L1Loss()

x = torch.ones(1, 24, 24, requires_grad=True)
z = torch.ones(1, 20, 20)
y = model(x)
loss = lossfn(z, y)
loss.backward()

print(model.conv2.weight.grad.shape)
conv1_grad = model.conv1.weight_orig.grad
assert conv1_grad is not None, "pruned conv1 weight has no gradient after backward"
assert torch.all(conv1_grad[model.conv1.weight_mask == 0] == 0)
print(conv1_grad.shape)
