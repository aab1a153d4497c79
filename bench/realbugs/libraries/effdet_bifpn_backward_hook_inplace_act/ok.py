"""effdet BiFPN with full backward hooks, after the usual workaround: the activations are
switched to inplace=False before the hooks are registered, so nothing rewrites the hooked
FpnCombine outputs (watched through a tensor hook, as FpnCombine takes a list) and backward
runs every hook.
"""
from typing import List

import torch
import torch.nn as nn


# effdet/efficientdet.py (effdet 0.4.1), resampling left out: all nodes share one level
class FpnCombine(nn.Module):
    def __init__(self, fpn_channels, inputs_offsets):
        super(FpnCombine, self).__init__()
        self.inputs_offsets = inputs_offsets  # weight_method='fastattn'
        self.edge_weights = nn.Parameter(torch.ones(len(inputs_offsets)), requires_grad=True)

    def forward(self, x: List[torch.Tensor]):
        nodes = [x[offset] for offset in self.inputs_offsets]
        edge_weights = nn.functional.relu(self.edge_weights.to(dtype=x[0].dtype))
        weights_sum = torch.sum(edge_weights)
        out = torch.stack([(nodes[i] * edge_weights[i]) / (weights_sum + 0.0001)
                           for i in range(len(nodes))], dim=-1)
        return torch.sum(out, dim=-1)


class Fnode(nn.Module):
    def __init__(self, combine: nn.Module, after_combine: nn.Module):
        super(Fnode, self).__init__()
        self.combine, self.after_combine = combine, after_combine

    def forward(self, x: List[torch.Tensor]) -> torch.Tensor:
        return self.after_combine(self.combine(x))


class BiFpnLayer(nn.Module):
    def __init__(self, fpn_channels, nodes, act_layer=nn.ReLU6):
        super(BiFpnLayer, self).__init__()
        self.fnode = nn.ModuleList()
        for inputs_offsets in nodes:
            after_combine = nn.Sequential()
            after_combine.add_module('act', act_layer(inplace=True))
            after_combine.add_module('conv', nn.Sequential(
                nn.Conv2d(fpn_channels, fpn_channels, 3, padding=1, groups=fpn_channels, bias=False),
                nn.Conv2d(fpn_channels, fpn_channels, 1, bias=False), nn.BatchNorm2d(fpn_channels)))
            self.fnode.append(Fnode(FpnCombine(fpn_channels, inputs_offsets), after_combine))

    def forward(self, x: List[torch.Tensor]):
        for fn in self.fnode:
            x.append(fn(x))
        return x[-2::]


torch.manual_seed(0)
bifpn = BiFpnLayer(fpn_channels=64, nodes=[(0, 1), (1, 2)])
grad_norms = {}
for module in (m for m in bifpn.modules() if hasattr(m, 'inplace')):
    module.inplace = False  # the workaround


def save_grad_norm(name):
    def hook(module, grad_output):
        grad_norms[name] = grad_output[0].norm().item()
    return hook


def watch_output(name):
    def forward_hook(module, inputs, output):
        output.register_hook(lambda grad: save_grad_norm(name)(module, (grad,)))
    return forward_hook

for name, module in bifpn.named_modules():
    if isinstance(module, nn.Conv2d):
        module.register_full_backward_pre_hook(save_grad_norm(name))
    elif isinstance(module, FpnCombine):  # list input: hook its output tensor instead
        module.register_forward_hook(watch_output(name))
out = bifpn([torch.randn(2, 64, 16, 16, requires_grad=True) for _ in range(2)])  # P3, P4 features
sum(o.square().mean() for o in out).backward()
assert 'fnode.0.combine' in grad_norms and 'fnode.1.combine' in grad_norms
