"""Probe of timm.layers: which layer create_act_layer builds for a name and whether it
writes its input, what DropPath does in training and in eval, and which layers
BatchNormAct2d holds and whether adding into its output in place breaks the backward."""
import json

import torch
from timm.layers import BatchNormAct2d, DropPath, create_act_layer, get_act_layer


def record(event, **facts):
    facts.update(event=event, grad=torch.is_grad_enabled())
    print("PROBE " + json.dumps(facts, sort_keys=True), flush=True)


torch.manual_seed(0)
for name, inplace in [("relu", None), ("relu", True), ("sigmoid", True), ("tanh", None),
                      ("gelu", True), ("silu", True), ("hard_swish", False)]:
    layer = create_act_layer(name, inplace=inplace)
    x = torch.randn(4)
    before = x.clone()
    layer(x)
    record("create_act_layer", name=name, inplace=inplace, layer=type(layer).__name__,
           layer_inplace=getattr(layer, "inplace", None), wrote_input=not torch.equal(x, before))
record("get_act_layer", none=get_act_layer(None) is None,
       passes_class=get_act_layer(torch.nn.GELU) is torch.nn.GELU)

drop = DropPath(0.5)
x = torch.randn(8, 3, requires_grad=True)
record("drop_path", training_op=type(drop(x).grad_fn).__name__,
       eval_returns_input=drop.eval()(x) is x)

for inplace in (True, False):
    bn = BatchNormAct2d(4, inplace=inplace)
    x = torch.randn(2, 4, 3, 3, requires_grad=True)
    out = bn(x)
    producer = type(out.grad_fn).__name__
    out += 1.0
    try:
        out.sum().backward()
        raised = ""
    except RuntimeError as error:
        raised = str(error).split(":")[0]
    record("batch_norm_act", inplace=inplace, act=type(bn.act).__name__, output_of=producer,
           add_in_place=raised)
