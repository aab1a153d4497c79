"""LeNet with random_unstructured pruning: conv1.weight.grad stays None after backward

After torch.nn.utils.prune.random_unstructured(model.conv1, name="weight"), the
Parameter moves to conv1.weight_orig and conv1.weight becomes a tensor recomputed by
a forward pre-hook as weight_orig * weight_mask. It is a non-leaf, so backward never
fills its .grad; the gradient lands on conv1.weight_orig.

Source: https://github.com/pytorch/pytorch/issues/102245
Shape: libraries
Symptom: pruned conv1 weight has no gradient after backward
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
conv1_grad = model.conv1.weight.grad  # culprit: GG305
assert conv1_grad is not None, "pruned conv1 weight has no gradient after backward"
print(conv1_grad.shape)
