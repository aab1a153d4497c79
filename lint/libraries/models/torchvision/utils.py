"""``torchvision/utils.py`` (torchvision 0.20): ``make_grid`` and ``save_image`` where autograd
can tell. Both run under ``torch.no_grad()`` (their result never requires grad), and
``make_grid(normalize=True)`` normalises a ``clone()`` of its argument, never the
argument. The image file ``save_image`` writes is left out."""

import math

import torch


@torch.no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None,
              scale_each=False, pad_value=0, **kwargs):
    if isinstance(tensor, list):
        tensor = torch.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = torch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        tensor = tensor.clone()  # avoid modifying tensor in-place
        if scale_each is True:
            for t in tensor:
                _norm_range(t, value_range)
        else:
            _norm_range(tensor, value_range)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    grid = tensor.new_full((tensor.size(1), height * ymaps + padding,
                            width * xmaps + padding), pad_value)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            grid.narrow(1, y * height + padding, height - padding).narrow(
                2, x * width + padding, width - padding).copy_(tensor[k])
            k = k + 1
    return grid


def _norm_range(t, value_range):
    if value_range is not None:
        low, high = value_range
    else:
        low, high = float(t.min()), float(t.max())
    t.clamp_(min=low, max=high)
    t.sub_(low).div_(max(high - low, 1e-5))


@torch.no_grad()
def save_image(tensor, fp, format=None, **kwargs):
    make_grid(tensor, **kwargs)
