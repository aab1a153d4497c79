"""torchvision BasicBlock with the ReLU before the residual sum, done out of place:
`out = out + identity` makes a new tensor, so the ReLU output saved for backward is intact.
"""
import torch
import torch.nn as nn


# torchvision/models/resnet.py (torchvision 0.2.2)
def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride


# the user's variant: relu and sum inverted, as in the issue thread
class SwappedBasicBlock(BasicBlock):
    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out = self.relu(out)
        out = out + identity
        return out


torch.manual_seed(0)
layer1 = nn.Sequential(SwappedBasicBlock(64, 64), SwappedBasicBlock(64, 64))  # resnet18 layer1
head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
optimizer = torch.optim.SGD(list(layer1.parameters()) + list(head.parameters()), lr=0.1)
images, labels = torch.randn(2, 64, 14, 14), torch.tensor([3, 5])
loss = nn.functional.cross_entropy(head(layer1(images)), labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
