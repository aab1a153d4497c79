"""Probe of mmcv.cnn: which layers ConvModule builds for a few configurations and which of
them write in place, what the block's output is (the op whose result it is), whether adding
into it in place breaks the backward, and what build_activation_layer builds alone."""
import json

import torch
from mmcv.cnn import ConvModule, build_activation_layer


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


def added_in_place(block, x):
    out = block(x)
    producer = type(out.grad_fn).__name__
    out = out if out is not x else out.clone()
    out += 1.0
    try:
        out.sum().backward()
        return producer, ""
    except RuntimeError as error:
        return producer, str(error).split(":")[0]


torch.manual_seed(0)
configurations = {
    "default": {},
    "bn": {"norm_cfg": dict(type="BN")},
    "no_act": {"norm_cfg": dict(type="BN"), "act_cfg": None},
    "not_inplace": {"norm_cfg": dict(type="BN"), "inplace": False},
    "leaky": {"act_cfg": dict(type="LeakyReLU", negative_slope=0.2)},
    "sigmoid": {"act_cfg": dict(type="Sigmoid")},
    "gn_preact": {"norm_cfg": dict(type="GN", num_groups=2), "order": ("norm", "act", "conv")},
}
for name, kwargs in configurations.items():
    block = ConvModule(4, 4, 3, padding=1, **kwargs)
    layers = [[type(layer).__name__, getattr(layer, "inplace", None)]
              for layer in block.children()]
    producer, raised = added_in_place(block, torch.randn(2, 4, 6, 6))
    record("conv_module", name=name, layers=layers, output_of=producer, add_in_place=raised)

relu = build_activation_layer(dict(type="ReLU"))
record("build_activation_layer", layer=type(relu).__name__, inplace=relu.inplace)
