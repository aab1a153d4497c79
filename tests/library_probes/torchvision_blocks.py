"""Probe of torchvision's building blocks: which layers Conv2dNormActivation, MLP and the
resnet blocks are made of and which of them write in place, what each block's output is
(the op whose result it is), whether adding into it in place breaks the backward, and what
make_grid does to autograd (its result, its argument with normalize=True)."""
import json

import torch
from torchvision.models.resnet import BasicBlock, Bottleneck
from torchvision.ops import MLP, Conv2dNormActivation, StochasticDepth
from torchvision.utils import make_grid


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def layers(module):
    return [[type(layer).__name__, getattr(layer, "inplace", None)] for layer in module.children()]


def added_in_place(block, x):
    out = block(x)
    producer = type(out.grad_fn).__name__
    out += x
    try:
        out.sum().backward()
        return producer, ""
    except RuntimeError as error:
        return producer, str(error).split(":")[0]


torch.manual_seed(0)
x = torch.randn(2, 8, 6, 6)
for name, block in [("conv_norm_act", Conv2dNormActivation(8, 8)),
                    ("conv_norm", Conv2dNormActivation(8, 8, activation_layer=None)),
                    ("basic_block", BasicBlock(8, 8)),
                    ("bottleneck", Bottleneck(8, 2))]:
    producer, raised = added_in_place(block, x)
    record("block", name=name, layers=layers(block), output_of=producer, add_in_place=raised)

for inplace in (None, True):
    head = MLP(4, [6, 3], dropout=0.1, inplace=inplace)
    try:
        head(torch.randn(5, 4)).sum().backward()
        raised = ""
    except RuntimeError as error:
        raised = str(error).split(":")[0]
    record("mlp", inplace=inplace, layers=layers(head), backward=raised)

depth = StochasticDepth(0.5, "row")
record("stochastic_depth", eval_returns_input=depth.eval()(x) is x)

weights = torch.randn(4, 3, 5, 5, requires_grad=True)
before = weights.detach().clone()
grid = make_grid(weights, nrow=2, normalize=True, scale_each=True)
record("make_grid", requires_grad=grid.requires_grad, argument_unchanged=torch.equal(
    weights.detach(), before), shape=list(grid.shape))
