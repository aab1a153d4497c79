"""Modes and layers built by name (issue 31), on small programs: ``eval()`` / ``train()``
reach torch's layers (a dropout not training hands back its input) through every name
and holder; a mode the paths disagree on is unknown; ``getattr(nn, name)`` and a table
of layer classes give the layer class when the name is known, and nothing otherwise.
Each program's verdict is torch's (the fixtures prove the shapes under torch)."""

from __future__ import annotations

import textwrap

import pytest

from gradguard import check_source


def findings(code: str) -> set[tuple[int, str]]:
    source = textwrap.dedent(code).lstrip("\n")
    return {(f.line, f.code) for f in check_source(source, "snippet.py")}


HEAD = """
    import torch
    import torch.nn as nn
    w = torch.randn(3, 3, requires_grad=True)
    h = torch.sigmoid(torch.randn(2, 3) @ w)
"""

CASES = {
    "a bare dropout in eval mode hands back its input": (HEAD + """
    d = nn.Dropout(0.5).eval()(h)
    d.mul_(2)
    h.sum().backward()
    """, {(7, "GG201")}),
    "a dropout in training mode makes a new tensor": (HEAD + """
    drop = nn.Dropout(0.5)
    drop.eval()
    drop.train()
    d = drop(h)
    d.mul_(2)
    h.sum().backward()
    """, set()),
    "train(False) is eval; every name for the layer sees it": (HEAD + """
    drop = nn.Dropout(0.5, inplace=True)
    net = nn.Sequential(drop)
    net.train(False)
    d = drop(h)
    d.mul_(2)
    h.sum().backward()
    """, {(10, "GG201")}),
    "setting a layer's training attribute sets that layer's mode": (HEAD + """
    drop = nn.Dropout(0.5)
    net = nn.Sequential(drop)
    drop.training = False
    net(h).mul_(2)
    drop.training = True
    net(h).mul_(2)
    h.sum().backward()
    """, {(9, "GG201")}),
    "an inplace dropout in eval mode writes nothing": (HEAD + """
    drop = nn.Dropout(0.5, inplace=True).eval()
    drop(h)
    h.sum().backward()
    """, set()),
    "a mode set on one path only is not known": (HEAD + """
    import sys
    drop = nn.Dropout(0.5)
    if len(sys.argv) > 1:
        drop.eval()
    d = drop(h)
    d.mul_(2)
    h.sum().backward()
    """, set()),
    "model.eval() reaches a dropout in a container of a block of the model": ("""
    import torch
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Dropout(0.3)])
        def forward(self, x):
            h = torch.sigmoid(self.layers[0](x))
            z = self.layers[1](h)
            z += 1
            return h
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
        def forward(self, x):
            return self.block(x)
    net = Net()
    alias = net.block.layers[1]
    net.eval()
    net(torch.randn(2, 4)).sum().backward()
    h = torch.sigmoid(torch.randn(2, 4, requires_grad=True))
    alias(h).mul_(2)
    h.sum().backward()
    """, {(10, "GG201"), (23, "GG201")}),
    "getattr(nn, name) with a name the code spells is the layer class": (HEAD + """
    ACT = "ReLU"
    def build(name=ACT):
        return getattr(nn, name)(inplace=True)
    build()(h)
    h.sum().backward()
    """, {(8, "GG201")}),
    "getattr(nn, name) with a name not known stays unknown": (HEAD + """
    import sys
    getattr(nn, sys.argv[1])(inplace=True)(h)
    getattr(nn, "Foo", nn.ReLU)(inplace=True)(h)
    h.sum().backward()
    """, set()),
    "a dict of layer classes indexed by a known key": (HEAD + """
    ACTS = dict(relu=nn.ReLU, gelu=nn.GELU)
    ACTS["relu"](inplace=True)(h)
    ACTS.get("gelu", nn.ReLU)()(h)
    ACTS.get("silu", nn.ReLU)(True)(h)
    h.sum().backward()
    """, {(7, "GG201"), (9, "GG201")}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_modes_case(name):
    code, expected = CASES[name]
    assert findings(code) == expected
