"""The engine's own behaviour: name resolution, scopes and control flow.

Each case is a snippet and the exact (line, code) findings it must produce. The
fixtures prove the rules against torch; these pin down the interpreter's reasoning
(how a name resolves, how paths join, how loops reach a fixpoint) on small programs.
Linting only: no torch needed.
"""

from __future__ import annotations

import textwrap

import pytest

from gradguard import check_source


def findings(code: str) -> set[tuple[int, str]]:
    source = textwrap.dedent(code).lstrip("\n")
    return {(f.line, f.code) for f in check_source(source, "snippet.py")}


# A class whose methods rebind an attribute: ``put`` stores a view, ``reset`` a fresh tensor.
STORE = """
        import torch
        class Store:
            def __init__(self):
                self.h = torch.zeros(1, 3)
            def put(self, h):
                self.h = h.unsqueeze(0)
            def reset(self):
                self.h = torch.zeros(1, 3)
        w = torch.randn(3, requires_grad=True)
"""

CASES = {
    # --- imports and shadowing -------------------------------------------------------
    "import torch as T": ("""
        import torch as T
        w = T.ones(2, requires_grad=True)
        w.add_(1)
        """, {(3, "GG101")}),
    "from torch import ones": ("""
        from torch import ones
        w = ones(2, requires_grad=True)
        w.add_(1)
        """, {(3, "GG101")}),
    "from torch import nn; F as alias": ("""
        from torch import nn
        import torch.nn.functional as Fn
        layer = nn.Linear(2, 2)
        Fn.relu(layer.weight, inplace=True)
        """, {(4, "GG101")}),
    "from torch.nn import init is silent": ("""
        import torch
        from torch.nn import init
        w = torch.empty(2, requires_grad=True)
        init.normal_(w)
        """, set()),
    "import torch.nn binds torch": ("""
        import torch.nn
        m = torch.nn.Linear(2, 2)
        m.weight.zero_()
        """, {(3, "GG101")}),
    "a local named torch shadows the module": ("""
        import torch
        def f(torch):
            w = torch.ones(2, requires_grad=True)
            w.add_(1)
        """, set()),
    "an import of another torch-named module shadows": ("""
        import torch
        import numpy as torch
        w = torch.ones(2, requires_grad=True)
        w.add_(1)
        """, set()),
    "relative import is not torch": ("""
        import torch
        from .nn import Parameter
        w = Parameter(torch.ones(2))
        w.add_(1)
        """, set()),
    "Parameter imported from torch.nn.parameter": ("""
        import torch
        from torch.nn.parameter import Parameter
        w = Parameter(torch.ones(2))
        w.add_(1)
        """, {(4, "GG101")}),
    "no torch in the file: nothing": ("""
        w = ones(2, requires_grad=True)
        w.add_(1)
        """, set()),
    # --- scopes: Python's rules, decided before a body runs ----------------------------
    "a name assigned in a function is its local: read first, it is not the module's": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def step():
            w -= 0.1 * w.grad
        (w * 2).sum().backward()
        step()
        """, set()),
    "global makes the function write the module's leaf": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def step():
            global w
            w -= 0.1 * w.grad
        (w * 2).sum().backward()
        step()
        """, {(5, "GG101")}),
    "a local bound on one path only is not the module's after the join": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def f(flag):
            if flag:
                w = torch.zeros(2)
            w.add_(1)
        """, set()),
    "a deleted local is not the module's": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def f():
            w = torch.zeros(2)
            del w
            w.add_(1)
        """, set()),
    "a global rebound in a followed call is the module's binding after it": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        v = torch.zeros(2)
        def swap():
            global w, v
            w, v = torch.zeros(2), torch.ones(2, requires_grad=True)
        swap()
        w.add_(1)
        v.add_(1)
        """, {(9, "GG101")}),
    "a global rebound by one call is what the caller's next call reads": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def reset():
            global w
            w = torch.zeros(2)
        def bump():
            w.add_(1)
        def main():
            reset()
            bump()
        with torch.no_grad():
            bump()
        main()
        """, set()),
    "a global a call not followed may rebind is unknown after it": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def release(n):
            global w
            if n:
                release(n - 1)
            else:
                w = w.detach()
        release(1)
        w.add_(1)
        """, set()),
    "nonlocal writes the enclosing function's leaf": ("""
        import torch
        def outer():
            w = torch.ones(2, requires_grad=True)
            def step():
                nonlocal w
                w -= 0.1
            step()
        outer()
        """, {(6, "GG101")}),
    "a nonlocal rebinding flows back to the enclosing function": ("""
        import torch
        def outer():
            w = torch.ones(2, requires_grad=True)
            def release():
                nonlocal w
                w = w.detach().clone()
            release()
            w.add_(1)
        outer()
        """, set()),
    "a closure reads the enclosing variable as the call sees it": ("""
        import torch
        def outer():
            w = torch.ones(2, requires_grad=True)
            def bump():
                w.add_(1)
            w = w * 2
            bump()
        """, set()),
    "a closure whose variable nothing rebinds after the def reads it": ("""
        import torch
        def outer():
            w = torch.ones(2, requires_grad=True)
            def bump():
                w.add_(1)
            return bump
        """, {(5, "GG101")}),
    "a nested function called from elsewhere does not read the module's name": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def outer():
            w = torch.zeros(2)
            def bump():
                w.add_(1)
            return bump
        outer()()
        """, set()),
    "a method reads the module's name, not the class attribute": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        class Opt:
            w = torch.zeros(2)
            def step(self):
                w.add_(1)
        Opt().step()
        """, {(6, "GG101")}),
    "a method of a class in a function does not see the class body": ("""
        import torch
        def build():
            w = torch.zeros(2)
            class C:
                w = torch.ones(2, requires_grad=True)
                def step(self):
                    w.add_(1)
            return C
        """, set()),
    "a method of a class in a function reads the function's settled variable": ("""
        import torch
        def build():
            w = torch.ones(2, requires_grad=True)
            class C:
                def step(self):
                    w.add_(1)
            return C
        """, {(6, "GG101")}),
    "a class body's comprehension sees its names only in the first iterable": ("""
        import torch
        w = torch.zeros(2)
        class C:
            w = torch.ones(2, requires_grad=True)
            bumped = [w.add_(1) for _ in range(2)]
            firsts = [v.add_(1) for v in [w]]
        """, {(6, "GG101")}),
    "a comprehension's target shadows the outer name only inside it": ("""
        import torch
        x = torch.zeros(2)
        ys = [x.add_(1) for x in [torch.ones(2, requires_grad=True)]]
        x.add_(1)
        """, {(3, "GG101")}),
    "a walrus in a comprehension binds in the function around it": ("""
        import torch
        w = torch.zeros(2)
        def f():
            made = [(w := torch.ones(2, requires_grad=True)) for _ in range(2)]
            w.add_(1)
        """, {(5, "GG101")}),
    # --- grad mode -------------------------------------------------------------------
    "no_grad block": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            w.add_(1)
        w.add_(1)
        """, {(5, "GG101")}),
    "set_grad_enabled as a call stays in effect": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        torch.set_grad_enabled(False)
        w.add_(1)
        torch.set_grad_enabled(True)
        w.add_(1)
        """, {(6, "GG101")}),
    "set_grad_enabled with an unknown flag is silent": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        with torch.set_grad_enabled(flag):
            w.add_(1)
        """, set()),
    "inference_mode and the autograd spelling": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        with torch.inference_mode():
            w.add_(1)
        with torch.autograd.no_grad():
            w.add_(1)
        """, set()),
    "no_grad decorator with and without parentheses": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        @torch.no_grad()
        def a():
            w.add_(1)
        @torch.no_grad
        def b():
            w.add_(1)
        def c():
            w.add_(1)
        """, {(10, "GG101")}),
    "an unknown decorator may change grad mode": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        @some_wrapper
        def a():
            w.add_(1)
        @staticmethod
        def b():
            w.add_(1)
        """, {(8, "GG101")}),
    # --- flow ------------------------------------------------------------------------
    "rebinding in one branch makes it unknown": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        if cond:
            w = w * 2
        w.add_(1)
        """, set()),
    "leaf on both branches stays a leaf": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        if cond:
            w.requires_grad_()
        else:
            pass
        w.add_(1)
        """, {(7, "GG101")}),
    "requires_grad set in one branch only is unknown": ("""
        import torch
        w = torch.ones(2)
        if cond:
            w.requires_grad = True
        w.add_(1)
        """, set()),
    "early return ends the path": ("""
        import torch
        def f(flag):
            w = torch.ones(2)
            if flag:
                return w
            w.requires_grad_()
            w.add_(1)
        """, {(7, "GG101")}),
    "loop: the effect of one iteration reaches the next": ("""
        import torch
        w = torch.ones(2)
        for i in range(3):
            if i > 0:
                w.mul_(2)
            w.requires_grad_()
        """, {(5, "GG101")}),
    "loop: each element is a fresh object": ("""
        import torch
        from torch import nn
        model = nn.Linear(2, 2)
        for p in model.parameters():
            p.requires_grad_(False)
            p.zero_()
        """, set()),
    "loop: a leaf rebound each iteration": ("""
        import torch
        for step in range(3):
            w = torch.ones(2, requires_grad=True)
            w.add_(1)
            w = w * 2
        """, {(4, "GG101")}),
    "loop: a leaf made before the loop": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        while running:
            w.sub_(0.1)
        """, {(4, "GG101")}),
    "break leaves the loop with its state": ("""
        import torch
        for step in range(3):
            w = torch.ones(2, requires_grad=True)
            break
        w.add_(1)
        """, {(5, "GG101")}),
    "a loop that may not run leaves the state before it too": ("""
        import sys
        import torch
        w = torch.ones(2)
        for step in range(len(sys.argv) - 1):
            w = torch.ones(2, requires_grad=True)
            break
        w.add_(1)
        """, set()),
    "a name a loop that may not run binds is bound where it is read": ("""
        import sys
        import torch
        for step in range(len(sys.argv) - 1):
            w = torch.ones(2, requires_grad=True)
            break
        w.add_(1)
        """, {(6, "GG101")}),
    "try: the handler may run after any statement": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        try:
            w = w * 2
        except RuntimeError:
            w.add_(1)
        """, set()),
    "match cases are joined": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        match mode:
            case "a":
                w.add_(1)
            case _:
                pass
        """, {(5, "GG101")}),
    "comprehension and lambda bodies are analysed": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        ys = [w.add_(i) for i in range(3)]
        f = lambda: w.mul_(2)
        """, {(3, "GG101"), (4, "GG101")}),
    "a lambda called is followed like a def": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        double = lambda t: t * 2
        y = double(w)
        print(y.grad)
        """, {(5, "GG305")}),
    "walrus binds": ("""
        import torch
        if (w := torch.ones(2, requires_grad=True)) is not None:
            w.add_(1)
        """, {(3, "GG101")}),
    "a known tensor is not None: the guarded branch never runs": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        loss = (w * 2).sum()
        if loss is None:
            w.add_(1)
        """, set()),
    "a .grad may be None: its test is not decided": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        if w.grad is None:
            w.add_(1)
        """, {(4, "GG101")}),
    "a bias its flag may have turned off may be None": ("""
        import torch.nn as nn
        def make(flag):
            lin = nn.Linear(2, 2, bias=flag)
            if lin.bias is None:
                lin.weight.add_(1)
        """, {(5, "GG101")}),
    "a bias its flag keeps is not None": ("""
        import torch.nn as nn
        lin = nn.Linear(2, 2)
        if lin.bias is None:
            lin.weight.add_(1)
        """, set()),
    "a conditional expression with a known test picks one arm": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        flag = True
        target = w if flag else torch.zeros(2)
        target.add_(1)
        """, {(5, "GG101")}),
    "every call passes a private helper the same flag: its body takes it": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def _update(step=True):
            if step:
                w.add_(1)
        _update(step=False)
        _update(False)
        """, set()),
    "callers passing different flags: the helper's flag stays unknown": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def _update(step=True):
            if step:
                w.add_(1)
        _update(step=False)
        _update(True)
        """, {(5, "GG101")}),
    "a public helper may have callers elsewhere: no flag flows": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def update(step=True):
            if step:
                w.add_(1)
        update(step=False)
        """, {(5, "GG101")}),
    "a helper also named outside a call: no flag flows": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        def _update(step=True):
            if step:
                w.add_(1)
        _update(step=False)
        hooks = [_update]
        """, {(5, "GG101")}),
    # --- objects -----------------------------------------------------------------------
    "alias sees requires_grad set through another name": ("""
        import torch
        a = torch.ones(2)
        b = a
        a.requires_grad = True
        b.add_(1)
        """, {(5, "GG101")}),
    "module attribute facts from __init__ reach other methods": ("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
                self.scale = nn.Parameter(torch.ones(1))
            def shrink(self):
                self.scale.mul_(0.5)
                self.fc.weight[0] = 0
        """, {(9, "GG101"), (10, "GG102")}),
    "an attribute rebound in another method is not trusted": ("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(1))
            def load(self, value):
                self.w = value
            def shrink(self):
                self.w.mul_(0.5)
        """, set()),
    "bias=False means no bias parameter": ("""
        import torch
        from torch import nn
        layer = nn.Linear(2, 2, bias=False)
        if layer.bias is not None:
            layer.bias.zero_()
        """, set()),
    "layer flags add and remove parameters, by keyword or position": ("""
        import torch
        from torch import nn
        x = torch.randn(2, 3, 4, 4)
        nn.InstanceNorm2d(3, affine=True)(x).sum().backward()
        nn.InstanceNorm2d(3, 1e-5, 0.1, True)(x).sum().backward()
        nn.InstanceNorm2d(3)(x).sum().backward()
        lin = nn.Linear(2, 3, False)
        if lin.bias is not None:
            lin.bias.zero_()
        nn.LayerNorm(3, elementwise_affine=False).weight.zero_()
        nn.LayerNorm(3, bias=False).weight.zero_()
        """, {(6, "GG304"), (11, "GG101")}),
    # An unknown flag leaves the layer's parameters unknown (no GG304 on its output), but
    # a parameter the code reads is there whenever that code runs (None.zero_() raises).
    "a flag of unknown value, or in **kwargs, leaves its parameters unknown": ("""
        import torch
        from torch import nn
        x = torch.randn(2, 3, 4, 4)
        nn.InstanceNorm2d(3, affine=flag)(x).sum().backward()
        nn.InstanceNorm2d(3, **config)(x).sum().backward()
        nn.Linear(2, 3, bias=flag).bias.zero_()
        nn.Linear(2, 3, bias=flag).weight.zero_()
        """, {(6, "GG101"), (7, "GG101")}),
    # A hook the engine cannot follow (a lambda, a callable object) may replace the
    # module's output: what comes out is unknown, and nothing is claimed about it.
    "a forward hook that cannot be followed leaves the output unknown": ("""
        import torch
        from torch import nn
        gate = nn.Sigmoid()
        gate.register_forward_hook(lambda m, i, o: o * 2)
        y = gate(torch.randn(3, requires_grad=True))
        y.add_(1)
        y.sum().backward()
        """, set()),
    "a forward hook defined in the file runs after the module": ("""
        import torch
        from torch import nn
        def scale_(module, inputs, output):
            output.mul_(2)
        gate = nn.Sigmoid()
        gate.register_forward_hook(scale_)
        y = gate(torch.randn(3, requires_grad=True))
        y.sum().backward()
        """, {(4, "GG201")}),
    "requires_grad_(False) on a module freezes its parameters": ("""
        import torch
        from torch import nn
        layer = nn.Linear(2, 2)
        layer.requires_grad_(False)
        layer.weight.zero_()
        """, set()),
    "positional inplace flag": ("""
        import torch
        from torch import nn
        w = torch.ones(2, requires_grad=True)
        nn.ReLU(True)(w)
        nn.ReLU(False)(w)
        """, {(4, "GG101")}),
    "Sequential runs its layers in order": ("""
        import torch
        from torch import nn
        w = torch.ones(2, requires_grad=True)
        block = nn.Sequential(nn.ReLU(inplace=True))
        block(w)
        """, {(5, "GG101")}),
    "Sequential of an OrderedDict: its layers run in order, reached by name": ("""
        from collections import OrderedDict
        import torch
        from torch import nn
        block = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("gate", nn.Sigmoid()),
                                           ("act", nn.ReLU(inplace=True))]))
        block.fc.weight.zero_()
        y = block(torch.ones(1, 2))
        y.sum().backward()
        """, {(6, "GG101"), (5, "GG201")}),
    "collections.OrderedDict filled by key, replaced by name": ("""
        import collections
        import torch
        from torch import nn
        layers = collections.OrderedDict()
        layers["gate"] = nn.Sigmoid()
        layers["act"] = nn.ReLU(inplace=True)
        layers["gate"] = nn.Identity()
        y = nn.Sequential(layers)(torch.ones(2, requires_grad=True) * 2)
        y.sum().backward()
        """, set()),
    "an OrderedDict changed by pop is not known; update adds to it": ("""
        from collections import OrderedDict
        import torch
        from torch import nn
        layers = OrderedDict(gate=nn.Sigmoid(), act=nn.ReLU(inplace=True))
        layers.pop("act")
        more = OrderedDict(gate=nn.Sigmoid())
        more.update({"act": nn.ReLU(inplace=True)})
        x = torch.ones(2, requires_grad=True)
        y = nn.Sequential(layers)(x)
        z = nn.Sequential(more)(x)
        (y + z).sum().backward()
        """, {(7, "GG201")}),
    "a plain dict is not a Sequential's layers (torch refuses it)": ("""
        import torch
        from torch import nn
        block = nn.Sequential({"gate": nn.Sigmoid(), "act": nn.ReLU(inplace=True)})
        y = block(torch.ones(2, requires_grad=True))
        y.sum().backward()
        """, set()),
    "a ModuleDict item set with an unknown key: its layers are unknown": ("""
        import torch
        from torch import nn
        heads = nn.ModuleDict({"gate": nn.Sigmoid(), "act": nn.ReLU(inplace=True)})
        heads[name] = nn.ReLU()
        x = torch.ones(2, requires_grad=True)
        for layer in heads.values():
            x = layer(x)
        x.sum().backward()
        """, set()),
    "a ModuleDict after pop or del: its layers are unknown": ("""
        import torch
        from torch import nn
        heads = nn.ModuleDict({"gate": nn.Sigmoid(), "act": nn.ReLU(inplace=True)})
        other = nn.ModuleDict({"gate": nn.Sigmoid(), "act": nn.ReLU(inplace=True)})
        heads.pop("act")
        del other["act"]
        x = torch.ones(2, requires_grad=True)
        for key in heads:
            x = heads[key](x)
        for layer in other.values():
            x = layer(x)
        x.sum().backward()
        """, set()),
    "a ModuleDict iterated by key, items and values": ("""
        import torch
        from torch import nn
        heads = nn.ModuleDict([("gate", nn.Sigmoid())])
        heads.update({"act": nn.ReLU(inplace=True)})
        pairs = nn.ModuleDict({"gate": nn.Sigmoid(), "act": nn.ReLU(inplace=True)})
        x = torch.ones(2, requires_grad=True)
        for key in heads:
            x = heads[key](x)
        for _, layer in pairs.items():
            x = layer(x)
        x.sum().backward()
        """, {(4, "GG201"), (5, "GG201")}),
    "a list item replaced before Sequential(*layers)": ("""
        import torch
        from torch import nn
        layers = [nn.Sigmoid(), nn.ReLU(inplace=True)]
        layers[1] = nn.ReLU()
        y = nn.Sequential(*layers)(torch.ones(2, requires_grad=True))
        y.sum().backward()
        """, set()),
    "register_parameter / register_buffer bind the attribute": ("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_parameter("w", nn.Parameter(torch.ones(3)))
                self.register_buffer("running", torch.zeros(3))
                self.register_parameter("b", None)
            def forward(self, x):
                self.running.mul_(0.9)
                self.w.mul_(2)
                if self.b is not None:
                    self.b.zero_()
                return x * self.w
        """, {(11, "GG101")}),
    "a name registered again in another method is not trusted": ("""
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_parameter("w", nn.Parameter(torch.ones(3)))
            def reset(self):
                self.register_parameter("w", None)
            def forward(self, x):
                self.w.mul_(2)
                return x
        """, set()),
    "m.inplace = True after construction": ("""
        import torch
        from torch import nn
        w = torch.ones(2, requires_grad=True)
        act = nn.ReLU()
        act.inplace = True
        act(w)
        """, {(6, "GG101")}),
    "to() may return the same leaf or a copy": ("""
        import torch
        w = torch.ones(2, requires_grad=True).to(device)
        w.add_(1)
        """, set()),
    "unknown index: a view or a copy, so silent after the fact": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        v = w[idx]
        v.add_(1)
        """, set()),
    "detach and data views are not leaves that require grad": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        w.detach()[0] = 1
        w.data.view(-1).add_(1)
        """, {(4, "GG302")}),
    "@= rebinds": ("""
        import torch
        w = torch.ones(2, 2, requires_grad=True)
        w @= torch.eye(2)
        w += 1
        """, set()),
    # --- tensors saved for backward ----------------------------------------------------
    "a write before the op that saves is fine": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        d.mul_(2)
        y = d * w
        y.sum().backward()
        """, set()),
    "backward frees the graph: a write after it is fine": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        y = d * w
        y.sum().backward()
        d.mul_(2)
        y2 = d * w
        y2.sum().backward()
        """, set()),
    "retain_graph keeps it: a write after it breaks the next backward": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        y = d * w
        y.sum().backward(retain_graph=True)
        d.mul_(2)
        y.sum().backward()
        """, {(6, "GG201")}),
    "no backward, no finding": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        y = d * w
        d.mul_(2)
        """, set()),
    "requires grad unknown: the save is not evidenced": ("""
        import torch
        d = torch.ones(2)
        y = d * w
        d.mul_(2)
        y.sum().backward()
        """, set()),
    "a write through .data moves no version counter: GG301, not GG201": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        y = d * w
        d.data.mul_(2)
        y.sum().backward()
        """, {(5, "GG301")}),
    "a write through .detach() does": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        d = torch.ones(2)
        y = d * w
        d.detach().mul_(2)
        y.sum().backward()
        """, {(5, "GG201")}),
    "a write on one branch is reported": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        y = w.sigmoid()
        if flag:
            y += 1
        y.sum().backward()
        """, {(5, "GG201")}),
    "allow_mutation_on_saved_tensors": ("""
        import torch
        w = torch.ones(2, requires_grad=True)
        with torch.autograd.graph.allow_mutation_on_saved_tensors():
            y = w.sigmoid()
            y += 1
            y.sum().backward()
        """, set()),
    "forward returns a graph whose saved output was changed": ("""
        import torch
        from torch import nn
        class Block(nn.Module):
            def forward(self, x):
                out = torch.sigmoid(x)
                out += 1
                return out
        """, {(6, "GG201")}),
    "a fresh forward each iteration supersedes a retained graph": ("""
        import torch
        from torch import nn
        model = nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            loss = model(torch.ones(1, 2, requires_grad=True)).sum()
            loss.backward(retain_graph=True)
            opt.step()
        """, set()),
    "the stale graph used again after a step": ("""
        import torch
        from torch import nn
        model = nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.ones(1, 2, requires_grad=True)).sum()
        loss.backward(retain_graph=True)
        opt.step()
        loss.backward()
        """, {(7, "GG202")}),
    "a write inside a same-file function is followed": ("""
        import torch
        def perturb(t):
            t.add_(1)
        w = torch.ones(2, requires_grad=True)
        y = w.exp()
        perturb(y)
        y.sum().backward()
        """, {(3, "GG201")}),
    "multi-output views": ("""
        import torch
        x = torch.ones(4, requires_grad=True) * 2
        a, b = x.chunk(2)
        a.mul_(2)
        c, d = x.tensor_split(2)
        c.mul_(2)
        """, {(4, "GG203")}),
    # --- what a write brings in, what a branch learns, what a site re-makes -------------
    "an in-place op with a grad operand makes the target require grad": ("""
        import torch
        import torch.nn.functional as F
        w = torch.ones(3, requires_grad=True)
        total = torch.tensor(0.)
        for i in range(3):
            total += F.mse_loss(w * i, torch.zeros(3))
        total.backward()
        """, set()),
    "copy_ from a grad tensor makes a buffer require grad": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        buf = torch.zeros(3)
        buf.copy_(w * 2)
        buf.sum().backward()
        """, set()),
    "a tensor that stays out of the graph still fails backward": ("""
        import torch
        total = torch.tensor(0.)
        total += torch.ones(())
        total.backward()
        """, {(4, "GG304")}),
    "if t.requires_grad refines the branch": ("""
        import torch
        loss = torch.tensor(0.)
        if loss.requires_grad:
            loss.backward()
        if not loss.requires_grad:
            pass
        else:
            loss.backward()
        """, set()),
    "a loop's next allocation is a new tensor": ("""
        import torch
        import torch.nn as nn
        relu = nn.ReLU(inplace=True)
        bn = nn.BatchNorm1d(2)
        outs = []
        for chunk in torch.chunk(torch.randn(4, 4, requires_grad=True), 2, 1):
            out = relu(bn(chunk))
            outs.append(out)
        torch.cat(outs, 1).sum().backward()
        """, set()),
    "a write in the same iteration is still seen": ("""
        import torch
        x = torch.randn(4, requires_grad=True)
        for i in range(3):
            h = torch.sigmoid(x)
            h.add_(1)
            h.sum().backward()
        """, {(5, "GG201")}),
    # --- freezing and calls the engine cannot see into ---------------------------------
    "freezing every parameter in a loop freezes the layers": ("""
        import torch
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(2, 2))
        for p in model.parameters():
            p.requires_grad = False
        model[0].weight.copy_(torch.ones(2, 2))
        """, set()),
    "requires_grad_(False) on a model freezes its layers": ("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
        net = Net()
        net.requires_grad_(False)
        net.fc.weight.zero_()
        """, set()),
    "an opaque call may freeze the module it receives": ("""
        import torch
        import torch.nn as nn
        from torchao import quantize_
        model = nn.Sequential(nn.Linear(2, 2))
        quantize_(model, None)
        model[0].weight.copy_(torch.ones(2, 2))
        """, set()),
    "print(model) only reads it": ("""
        import torch
        import torch.nn as nn
        model = nn.Sequential(nn.Linear(2, 2))
        print(model)
        model[0].weight.copy_(torch.ones(2, 2))
        """, {(5, "GG101")}),
    "a module that refers to itself (torch/_inductor)": ("""
        import torch
        import torch.nn as nn
        class Node(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
                self.me = self
        n = Node()
        opt = torch.optim.SGD(n.parameters(), lr=0.1)
        n.fc.weight.add_(1)
        """, {(10, "GG101")}),
    "torch.load gives no tensor": ("""
        import torch
        state = torch.load("state.pt", weights_only=False)
        state["args"].data = 1
        """, set()),
    "an optimizer over itertools.chain owns both modules": ("""
        import itertools
        import torch
        import torch.nn as nn
        g, e = nn.Linear(2, 2), nn.Linear(2, 2)
        opt = torch.optim.Adam(itertools.chain(g.parameters(), e.parameters()))
        loss = e(torch.sigmoid(g(torch.randn(3, 2)))).sum()
        loss.backward(retain_graph=True)
        opt.step()
        loss.backward()
        """, {(8, "GG202")}),
    # --- iteration, .detach() aliases, torch.tensor copies (issue 22) ------------------
    "unpacking the rows of a tensor into a list: each row is an unbind output": ("""
        import torch
        w = torch.ones(3, 2, requires_grad=True)
        rows = list(w * 2)
        rows[0].add_(1)
        """, {(4, "GG203")}),
    "zip over two tensors: each row is a view of its own tensor": ("""
        import torch
        w = torch.ones(3, 2, requires_grad=True)
        x = w * 2
        y = torch.zeros(3, 2)
        for a, b in zip(y, x):
            a.add_(1)
            b.add_(1)
        """, {(7, "GG203")}),
    "a .detach() alias taken again each pass sees only the writes after it": ("""
        import torch
        x = torch.ones(3, requires_grad=True)
        for _ in range(3):
            (x * 2).sum().backward()
            g = x.grad.detach()
            print(g)
            x.grad.zero_()
        """, set()),
    "a .detach() alias read after the original's write, in a loop": ("""
        import torch
        x = torch.ones(3)
        snapshot = x.detach()
        for _ in range(3):
            x.add_(1)
            print(x - snapshot)
        """, {(5, "GG309")}),
    "a .detach() alias read alone after an update of its original: the new values": ("""
        import torch
        x = torch.ones(3)
        view = x.detach()
        for _ in range(3):
            x.add_(1)
            print(view)
        """, set()),
    "a .detach() alias read after its original was reset: it reads constants": ("""
        import torch
        x = torch.ones(3)
        kept = x.detach()
        x[:] = 0
        print(kept)
        """, {(4, "GG309")}),
    "torch.tensor of tensors that require grad, only logged": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        loss = (w * 2).sum()
        history = torch.tensor([loss, loss])
        print(history)
        loss.backward()
        """, set()),
    "torch.tensor(t, requires_grad=True) is a re-wrap (GG304), not GG310": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        loss = torch.tensor((w * 2).sum(), requires_grad=True)
        loss.backward()
        """, {(3, "GG304")}),
    "torch.tensor copy as the whole loss: GG304, the loss has no graph at all": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        loss = torch.tensor([(w * 2).sum()]).sum()
        loss.backward()
        """, {(4, "GG304")}),
    "isinstance(data, torch.Tensor) of a list: only the other arm runs": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        data = [(w * 2).sum(), (w * 3).sum()]
        if isinstance(data, torch.Tensor):
            loss = data.sum()
        else:
            loss = torch.as_tensor(data).sum()
        loss.backward()
        """, {(8, "GG304")}),
    "isinstance of a list against a class the engine does not know stays open": ("""
        import torch
        from elsewhere import Batch
        w = torch.ones(3, requires_grad=True)
        data = [(w * 2).sum(), (w * 3).sum()]
        if isinstance(data, (torch.Tensor, Batch)):
            loss = torch.stack(data).sum()
        else:
            loss = torch.as_tensor(data).sum()
        loss.backward()
        """, set()),
    "torch.as_tensor of a tensor is that very tensor, graph and all": ("""
        import torch
        w = torch.ones(3, requires_grad=True)
        loss = torch.as_tensor((w * 2).sum())
        loss.backward()
        """, set()),
    # --- object state across methods --------------------------------------------------
    "what a method stores on its object is seen through every name of it": (STORE + """
        s = Store()
        alias = s
        s.put(w * 2)
        alias.h.detach_()
        """, {(14, "GG306")}),
    "the method called last decides what the object holds": (STORE + """
        s = Store()
        s.put(w * 2)
        s.reset()
        s.h.detach_()
        """, set()),
    "a call the engine cannot follow may rebind what the object's methods rebind": (STORE + """
        from elsewhere import refresh
        s = Store()
        s.put(w * 2)
        refresh(s)
        s.h.detach_()
        """, set()),
    "an object's state in a loop: each pass's call is followed": (STORE + """
        s = Store()
        for _ in range(2):
            s.put(w * 2)
            s.h.detach_()
        """, {(14, "GG306")}),
    "an object held by another: its method's effect reaches the holder's path": (STORE + """
        class Holder:
            def __init__(self):
                self.store = Store()
            def step(self, x):
                self.last = x
                self.store.put(x)
        holder = Holder()
        holder.step(w * 2)
        holder.store.h.detach_()
        """, {(19, "GG306")}),
    "a layer's forward stores on itself: the container holding it holds that": ("""
        import torch
        import torch.nn as nn
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)
                self.aux = None
            def forward(self, x):
                h = self.fc(x)
                self.aux = h.unsqueeze(0)
                return h
        layers = nn.ModuleList([Gate(), Gate()])
        x = torch.randn(2, 3)
        for layer in layers:
            x = layer(x)
        layers[0].aux.detach_()
        """, {(16, "GG306")}),
    "a function analysed on its own may run before a method rebinds the object": (STORE + """
        s = Store()
        def use():
            s.h.detach_()
        use()
        s.put(w * 2)
        """, set()),
    "a cyclic object graph (connectors that keep their trainer) is analysed": ("""
        import torch
        class Connector:
            def __init__(self, trainer):
                self.trainer = trainer
                self.ready = False
            def setup(self):
                self.ready = True
        class Trainer:
            def __init__(self):
                self.first = Connector(self)
                self.second = Connector(self)
                self.first.setup()
            def fit(self, flag):
                if flag:
                    self.first.setup()
                else:
                    self.second.setup()
                self.weights = torch.zeros(3)
        trainer = Trainer()
        trainer.fit(True)
        """, set()),
    "a method not followed may rebind what the objects it holds hold": (STORE + """
        class Holder:
            def __init__(self):
                self.store = Store()
            def step(self):
                self.store.reset()
        holder = Holder()
        holder.store.put(w * 2)
        holder.step()
        holder.store.h.detach_()
        """, set()),
    # --- precision (issue 28): what only an assumption says makes no certain finding ------
    "two models known only by use: their parameters are not each other's": ("""
        import torch
        def ema(target, model, rate):
            for t, s in zip(target.parameters(), model.parameters()):
                t.detach().mul_(rate).add_(s.detach(), alpha=1 - rate)
        """, set()),
    "a forward's argument requires grad only by assumption: no GG203 in its own body": ("""
        import torch.nn as nn
        class Shift(nn.Module):
            def forward(self, x, edge_index):
                src, dst = edge_index.split(1)
                src += 1
                return x[src[0]]
        """, set()),
    "a forward followed with an activation: its split outputs require grad in fact": ("""
        import torch
        import torch.nn as nn
        class Halve(nn.Module):
            def forward(self, x):
                a, b = x.chunk(2)
                a.mul_(2)
                return a + b
        Halve()(nn.Linear(2, 2)(torch.randn(4, 2)))
        """, {(6, "GG203")}),
    "integer tensors by annotation and by conversion require no grad": ("""
        import torch
        import torch.nn as nn
        class Index(nn.Module):
            def forward(self, ids: torch.LongTensor):
                a, b = ids.split(1)
                a += 1
        h = nn.Linear(2, 2)(torch.randn(2, 2))
        c, d = h.to(torch.long).split(1)
        c += 1
        e, f = h.type(torch.cuda.LongTensor).split(1)
        e += 1
        """, set()),
    "a .data term matters when the step after its backward updates that parameter": ("""
        import torch
        import torch.nn as nn
        net = nn.Linear(2, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        loss = net(torch.randn(3, 2)).sum() + net.weight.data.abs().sum()
        loss.backward()
        opt.step()
        """, {(5, "GG307")}),
    "a .data term of a parameter the next step does not update is the algorithm's": ("""
        import torch
        import torch.nn as nn
        g, d = nn.Linear(2, 2), nn.Linear(2, 1)
        opt_g = torch.optim.SGD(g.parameters(), lr=0.1)
        opt_d = torch.optim.SGD(d.parameters(), lr=0.1)
        loss = (g(torch.randn(3, 2)) @ d.weight.data.t()).sum()
        loss.backward()
        opt_g.step()
        """, set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_engine_case(name):
    code, expected = CASES[name]
    assert findings(code) == expected


def test_deep_nesting_and_long_chains_do_not_crash():
    deep = "import torch\nx = " + "(" * 150 + "1" + ")" * 150 + "\n"
    chain = "import torch\nx = " + " + ".join(["a"] * 1500) + "\n"
    attrs = "import torch\nx = torch" + ".a" * 500 + "\n"
    for source in (deep, chain, attrs):
        assert not [f for f in check_source(source, "deep.py") if f.code.startswith("GG00")]


def test_a_step_in_a_helper_names_the_calls_that_step_and_backpropagate():
    """One helper steps and backpropagates (``update_params(opt, loss)``, called once per
    loss): the finding lands at its step, and names the call that stepped too early and
    the call whose backward then fails."""
    code = textwrap.dedent("""\
        import torch
        import torch.nn as nn

        def update(optimizer, loss):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        critic, actor = nn.Linear(3, 1), nn.Linear(3, 3)
        critic_opt = torch.optim.SGD(critic.parameters(), lr=0.1)
        actor_opt = torch.optim.SGD(actor.parameters(), lr=0.1)
        states = torch.randn(4, 3)
        critic_loss = critic(states).pow(2).mean()
        actor_loss = -critic(actor(states)).mean()
        update(critic_opt, critic_loss)
        update(actor_opt, actor_loss)
        """)
    [finding] = [f for f in check_source(code, "sac.py") if f.code == "GG202"]
    assert finding.line == 7
    assert "(the step runs in the call at line 15, the backward in the call at line 16)" \
        in finding.message


def test_name_counts_skip_strings_and_comments_as_tokenize_does():
    """``constructions._name_tokens`` blanks strings and comments with a regular expression
    instead of running Python's tokenize: the counts must be tokenize's, prefixes,
    triple quotes, escapes and quotes inside comments included. (No f-string: from
    Python 3.12 on, tokenize reads the names inside one, as the analysis does not need.)"""
    import io
    import tokenize
    from collections import Counter

    from gradguard.engine.constructions import _name_tokens

    text = (
        'x = "a # not a comment" + Net  # a comment with a quote \' and Net\n'
        "y = rb'\\x00 Net' + u\"Net\" + '''Net\n\"Net\" Net''' + Net\n"
        's = "escaped \\" Net" ; t = \'line \\\n Net\'\n'
        'class Net: pass\n'
        'z = 1e5 + 0xff + Net.weight\n'
    )
    expected = Counter(token.string for token in
                       tokenize.generate_tokens(io.StringIO(text).readline)
                       if token.type == tokenize.NAME)
    assert _name_tokens(text) == expected
    assert expected["Net"] == 4
