"""Layers wrapped in place and calls passed through (issue 32, the Hugging Face models),
on small programs: a wrapper put in a layer's place by ``setattr`` on the module holding
it, found through ``named_children()`` and a list of names, runs in the layer's place;
``isinstance`` tells an object of the file's classes from a torch layer; a wrapper's
``self.model(*args, **kwargs)`` passes what it was given on; a ``SimpleNamespace`` holds
the parts it is given. Each verdict is torch's:
the in-place write raises exactly where a finding is expected."""

from __future__ import annotations

import textwrap

import pytest

from gradguard import check_source


def findings(code: str) -> set[tuple[int, str]]:
    source = textwrap.dedent(code).lstrip("\n")
    return {(f.line, f.code) for f in check_source(source, "snippet.py")}


MODEL = """
    import torch
    import torch.nn as nn


    class AddInPlace(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base_layer = base

        def forward(self, x):
            result = self.base_layer(x)
            result += 1
            return result


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.norm = nn.LayerNorm(4)

        def forward(self, x):
            return self.norm(self.proj(x))


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 4)
            self.blocks = nn.ModuleList([Block(), Block()])

        def forward(self, ids):
            h = self.emb(ids)
            for block in self.blocks:
                h = block(h)
            return h


    def make_leaf(module, inputs, output):
        output.requires_grad_(True)


    def wrap(model, targets):
        model.requires_grad_(False)
        for module in model.modules():
            for name, child in module.named_children():
                if name in targets:
                    setattr(module, name, AddInPlace(child))


    net = Net()
"""

CASES = {
    "a wrapper set by name runs in the layer's place (its += on a hooked leaf raises)": (
        MODEL + """
    wrap(net, ["emb"])
    net.emb.base_layer.register_forward_hook(make_leaf)
    net(torch.tensor([1, 2]))
    """, {(12, "GG101")}),
    "a name not in the list leaves the layer alone": (MODEL + """
    wrap(net, ["proj"])
    net.emb.register_forward_hook(make_leaf)
    net(torch.tensor([1, 2]))
    """, set()),
    "freezing before wrapping holds: a frozen weight written in place is no leaf error": (
        MODEL + """
    wrap(net, ["proj"])
    net.emb.weight.add_(1)
    """, set()),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_wrapping(case):
    code, expected = CASES[case]
    assert findings(code) == expected


PASS_THROUGH = """
    import torch
    import torch.nn as nn


    class Inner(nn.Module):
        def forward(self, x=None, scale=None):
            x.mul_(scale)
            return x


    class Wrapper(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args, **kwargs):
            return self.model(*args, **kwargs)


    w = torch.randn(3, requires_grad=True)
    Wrapper(Inner())({call})
"""


@pytest.mark.parametrize("call, expected", [
    ("x=w, scale=2.0", {(7, "GG101")}),
    ("w, scale=2.0", {(7, "GG101")}),
    ("x=w.detach(), scale=2.0", set()),
])
def test_a_wrapper_passes_its_arguments_on(call, expected):
    assert findings(PASS_THROUGH.replace("{call}", call)) == expected


def test_isinstance_tells_the_files_classes_from_torchs_layers():
    code = """
    import torch
    import torch.nn as nn


    class Scale(nn.Module):
        def forward(self, x):
            return x * 2


    w = torch.randn(3, requires_grad=True)
    if isinstance(Scale(), nn.Embedding):
        w.add_(1)
    if isinstance(Scale(), nn.Module):
        w.mul_(2)
    """
    assert findings(code) == {(14, "GG101")}


def test_a_simple_namespace_holds_what_its_keywords_give():
    code = """
    from types import SimpleNamespace

    import torch
    import torch.nn as nn

    pipe = SimpleNamespace(encoder=nn.Linear(3, 3), name="tiny")
    pipe.encoder.weight[0] = torch.zeros(3)
    with torch.no_grad():
        pipe.encoder.weight[1] = torch.zeros(3)
    pipe.decoder.weight[0] = torch.zeros(3)
    """
    assert findings(code) == {(7, "GG102")}


@pytest.mark.parametrize("freeze, expected", [("", {(11, "GG101")}),
                                              ("model.requires_grad_(False)", set())])
def test_freezing_a_model_freezes_the_parameters_its_classes_hold(freeze, expected):
    code = f"""
    import torch
    import torch.nn as nn

    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(3))

    model = nn.Sequential(nn.Linear(3, 3), Norm())
    {freeze}
    model[1].weight.add_(1)
    """
    assert findings(code) == expected
