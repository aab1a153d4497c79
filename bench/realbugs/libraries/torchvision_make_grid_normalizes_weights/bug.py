"""torchvision make_grid used to view model weights: with normalize=True it clamps and
rescales its input in place, so passing conv1.weight.data rewrites the layer's weights
behind autograd's back in the middle of training.

Source: https://github.com/pytorch/vision/issues/217
Shape: libraries
Symptom: make_grid rewrote the conv1 weights in place
"""
import math

import torch
import torch.nn as nn


# torchvision/utils.py (torchvision 0.1.9), grid part only
irange = range


def make_grid(tensor, nrow=8, padding=2, normalize=False, range=None, scale_each=False, pad_value=0):
    if tensor.dim() == 4 and tensor.size(1) == 1:  # single-channel images
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        def norm_ip(img, min, max):
            img.clamp_(min=min, max=max)
            img.add_(-min).div_(max - min)

        def norm_range(t, range):
            if range is not None:
                norm_ip(t, range[0], range[1])
            else:
                norm_ip(t, t.min(), t.max())

        if scale_each is True:
            for t in tensor:  # loop over mini-batch dimension
                norm_range(t, range)
        else:
            norm_range(tensor, range)
    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    grid = tensor.new(3, height * ymaps + padding, width * xmaps + padding).fill_(pad_value)
    k = 0
    for y in irange(ymaps):
        for x in irange(xmaps):
            if k >= nmaps:
                break
            grid.narrow(1, y * height + padding, height - padding)\
                .narrow(2, x * width + padding, width - padding).copy_(tensor[k])
            k = k + 1
    return grid


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv1(x)).mean((2, 3)))


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
images, labels = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
for step in range(2):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
    weights_before = model.conv1.weight.detach().clone()
    grid = make_grid(model.conv1.weight.data, nrow=8, normalize=True, scale_each=True)  # culprit: GG302
    assert torch.equal(model.conv1.weight.detach(), weights_before), \
        "make_grid rewrote the conv1 weights in place"
