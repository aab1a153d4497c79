"""Random but valid PyTorch programs, seeded and reproducible, for differential testing
against torch (``tests/test_generated_programs.py``).

A program is built statement by statement over a small typed environment, so that
everything it does is legal torch except the autograd mistakes gradguard is about:

* tensors: leaves that require grad (``torch.rand(..., requires_grad=True)``,
  ``nn.Parameter``), plain tensors, results of ops;
* ops drawn from the linter's own knowledge (``lint/knowledge/data``: every pointwise op it has a
  saved-tensor entry for that torch runs on these tensors), and operators, methods and
  ``F`` functions with scalar and tensor overloads;
* views and indexing (``t()``, ``view``, ``[0]``, ``detach()``, ``.data``);
* in-place methods, augmented assignments, item assignments, ``.data`` writes, some
  under ``torch.no_grad()``;
* ``nn`` layers and ``nn.Sequential`` with ``inplace=`` flags, helper functions and small
  ``nn.Module`` classes (so summaries across calls are exercised), an optimizer and its
  ``step()``;
* in some programs, repeated blocks (``RepeatedBlocks``): several instances of one residual
  block class (torchvision's ``BasicBlock``: linear, batch norm, ``nn.ReLU(inplace=True)``,
  ``out += identity``, one block with a ``downsample``) in an ``nn.Sequential``, in an
  ``nn.ModuleList`` run by a loop, or built by a ``_make_layer``-style helper, one block
  perhaps with a real bug (a write into the output its own ``sigmoid`` saved);
* loops and branches (whose conditions are Python values the linter can see), and at the
  end one ``backward()`` or ``torch.autograd.grad`` over what the program computed.

Every tensor is a 3x3 (or 3-vector, or 9-vector) float tensor with values in [0.5, 1.5),
so shapes always agree and no op needs a guard. Run as a script it prints a program:

    python tests/program_generator.py SEED
"""

from __future__ import annotations

import functools
import random
import sys
import warnings
from dataclasses import dataclass, field

MATRIX, ROW, FLAT = "matrix", "row", "flat"  # shapes (3, 3), (3,), (9,)
SHAPES = {MATRIX: "3, 3", ROW: "3", FLAT: "9"}

# name -> (function form or None, method form or None); each op keeps its input's shape
UNARY = {
    "exp": ("torch.exp", "exp"), "sigmoid": ("torch.sigmoid", "sigmoid"),
    "tanh": ("torch.tanh", "tanh"), "relu": ("torch.relu", "relu"),
    "sin": ("torch.sin", "sin"), "cos": ("torch.cos", "cos"), "log": ("torch.log", "log"),
    "sqrt": ("torch.sqrt", "sqrt"), "abs": ("torch.abs", "abs"), "neg": ("torch.neg", "neg"),
    "reciprocal": ("torch.reciprocal", "reciprocal"), "square": ("torch.square", "square"),
    "softmax": ("torch.softmax({}, 0)", None), "gelu": ("F.gelu", None),
    "silu": ("F.silu", None), "elu": ("F.elu", None), "clone": (None, "clone"),
    "erf": ("torch.erf", "erf"), "rsqrt": ("torch.rsqrt", "rsqrt"),
}
# name -> (operator or None, function form or None, method form or None)
BINARY = {
    "mul": ("*", "torch.mul", "mul"), "add": ("+", "torch.add", "add"),
    "sub": ("-", "torch.sub", "sub"), "div": ("/", "torch.div", "div"),
    "pow": ("**", "torch.pow", "pow"), "maximum": (None, "torch.maximum", "maximum"),
    "minimum": (None, "torch.minimum", "minimum"), "atan2": (None, "torch.atan2", "atan2"),
    "hypot": (None, "torch.hypot", "hypot"),
}


@functools.cache
def knowledge_ops() -> tuple[list[str], list[str]]:
    """The pointwise ops gradguard has a saved-tensor entry for (its knowledge data), split
    into those torch runs on one and on two 3x3 tensors with a differentiable 3x3 result:
    the op table the programs draw from besides the forms above."""
    import torch

    from gradguard.knowledge import load

    unary_ops, binary_ops = [], []
    api = load()
    for name in sorted(api.pointwise_ops & set(api.saved_ops)):
        if name.endswith("_") or not callable(getattr(torch, name, None)):
            continue
        for found, arity in ((unary_ops, 1), (binary_ops, 2)):
            inputs = [(torch.rand(3, 3) + 0.5).requires_grad_() for _ in range(arity)]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = getattr(torch, name)(*inputs)
                    out.sum().backward()
            except Exception:  # noqa: BLE001 - another arity, or not for these inputs
                continue
            if out.shape == (3, 3):
                found.append(name)
                break
    return unary_ops, binary_ops


# in-place method -> whether it takes a second operand (a tensor or a number)
INPLACE = {
    "mul_": True, "add_": True, "sub_": True, "div_": True, "pow_": True, "zero_": False,
    "relu_": False, "sigmoid_": False, "exp_": False, "tanh_": False, "neg_": False,
    "sqrt_": False, "clamp_": False, "fill_": False, "copy_": True,
}
AUGMENTED = ("+=", "-=", "*=", "/=")
# (no Dropout: with p=0 torch skips its in-place write, and any other p draws random numbers,
# so that a fixed line would change the values every later line sees)
ACTIVATIONS = ("nn.ReLU({})", "nn.Sigmoid()", "nn.Tanh()", "nn.LeakyReLU(0.1{})",
               "nn.ELU({})", "nn.Hardtanh({})", "nn.SiLU({})")



@dataclass
class Var:
    """A tensor the program holds: its name, shape, and what it is."""

    name: str
    shape: str
    leaf_grad: bool = False  # a leaf that requires grad
    plain: bool = False  # does not require grad (made without it, or cut from the graph)
    contiguous: bool = True  # so that ``view`` of it is legal
    via_data: bool = False  # a ``.data`` alias: a write through it is silent


@dataclass
class Program:
    """The program being built: its lines, the tensors in scope, and counters."""

    rng: random.Random
    lines: list[str] = field(default_factory=list)
    tensors: list[Var] = field(default_factory=list)
    layers: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)  # instances of the helper modules
    helpers: list[tuple[str, str]] = field(default_factory=list)  # (name, kind)
    counter: int = 0
    indent: int = 0
    optimizer: bool = False
    reached: list[str] = field(default_factory=list)  # what the backward must go through

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def pick(self, shape: str | None = None, **facts) -> Var | None:
        """A tensor in scope of ``shape`` (any if None) with the given facts, or None."""
        found = [v for v in self.tensors if (shape is None or v.shape == shape)
                 and all(getattr(v, k) == want for k, want in facts.items())]
        return self.rng.choice(found) if found else None

    def bind(self, name: str, shape: str, **facts) -> Var:
        """``name`` now holds a new tensor (an older binding of the name is forgotten)."""
        self.tensors = [v for v in self.tensors if v.name != name]
        var = Var(name, shape, **facts)
        self.tensors.append(var)
        return var


# ----------------------------------------------------------------------------- pieces


def create(p: Program) -> None:
    """A new tensor: a leaf requiring grad, a parameter, or a plain one."""
    shape = p.rng.choice([MATRIX, MATRIX, ROW, FLAT])
    size = SHAPES[shape]
    kind = p.rng.random()
    if kind < 0.4:
        name = p.fresh("w")
        p.emit(f"{name} = (torch.rand({size}) + 0.5).requires_grad_()")
        p.bind(name, shape, leaf_grad=True)
    elif kind < 0.55:
        name = p.fresh("w")
        p.emit(f"{name} = nn.Parameter(torch.rand({size}) + 0.5)")
        p.bind(name, shape, leaf_grad=True)
    elif kind < 0.7:
        name = p.fresh("w")
        p.emit(f"{name} = torch.rand({size}, requires_grad=True)")
        p.bind(name, shape, leaf_grad=True)
    else:
        name = p.fresh("p")
        p.emit(f"{name} = torch.rand({size}) + 0.5")
        p.bind(name, shape, plain=True)


def operand(p: Program, shape: str) -> str:
    """A second operand for a binary op: a tensor of ``shape`` or a number."""
    other = p.pick(shape)
    if other is None or p.rng.random() < 0.3:
        return p.rng.choice(["2", "0.5", "1.5"])
    return other.name


def unary(p: Program) -> None:
    source = p.pick()
    if source is None:
        return create(p)
    if p.rng.random() < 0.5:  # an op of the knowledge data, as a function or a method
        name = p.rng.choice(knowledge_ops()[0])
        function, method = f"torch.{name}", name if _is_method(name) else None
    else:
        name = p.rng.choice(sorted(UNARY))
        function, method = UNARY[name]
    if function is not None and (method is None or p.rng.random() < 0.5):
        text = function.format(source.name) if "{}" in function else f"{function}({source.name})"
    else:
        text = f"{source.name}.{method}()"
    result = p.fresh("h")
    p.emit(f"{result} = {text}")
    # a pointwise op keeps its input's strides: a transpose's sigmoid is no more viewable
    p.bind(result, source.shape, plain=source.plain, contiguous=source.contiguous)


def binary(p: Program) -> None:
    left = p.pick()
    if left is None:
        return create(p)
    if p.rng.random() < 0.4:  # an op of the knowledge data, on two tensors
        name = p.rng.choice(knowledge_ops()[1])
        right = p.pick(left.shape) or left
        text = f"torch.{name}({left.name}, {right.name})" \
            if not _is_method(name) or p.rng.random() < 0.5 \
            else f"{left.name}.{name}({right.name})"
        result = p.fresh("h")
        p.emit(f"{result} = {text}")
        p.bind(result, left.shape, plain=left.plain and right.plain,
               contiguous=left.contiguous and right.contiguous)
        return
    name = p.rng.choice(sorted(BINARY))
    operator, function, method = BINARY[name]
    right = operand(p, left.shape)
    number = not right[0].isalpha()
    if name in ("maximum", "minimum", "atan2", "hypot") and number:
        right = f"torch.full_like({left.name}, {right})"
    form = p.rng.random()
    if operator is not None and (form < 0.4 or function is None):
        text = f"{left.name} {operator} {right}"
    elif form < 0.7 and not (number and name in ("maximum", "minimum")):
        text = f"{function}({left.name}, {right})"
    else:
        text = f"{left.name}.{method}({right})"
    result = p.fresh("h")
    p.emit(f"{result} = {text}")
    p.bind(result, left.shape, plain=left.plain and (number or _is_plain(p, right)),
           contiguous=left.contiguous and (number or _is_contiguous(p, right)))


def _is_method(name: str) -> bool:
    import torch

    return callable(getattr(torch.Tensor, name, None))


def _is_plain(p: Program, name: str) -> bool:
    return any(v.name == name and v.plain for v in p.tensors)


def _is_contiguous(p: Program, name: str) -> bool:
    return any(v.name == name and v.contiguous for v in p.tensors)


def matmul(p: Program) -> None:
    left = p.pick(MATRIX)
    if left is None:
        return create(p)
    right = p.pick(p.rng.choice([MATRIX, ROW])) or left
    result = p.fresh("h")
    text = p.rng.choice([f"{left.name} @ {right.name}", f"torch.matmul({left.name}, {right.name})",
                         f"{left.name}.mm({right.name})" if right.shape == MATRIX
                         else f"{left.name}.mv({right.name})"])
    p.emit(f"{result} = {text}")
    p.bind(result, right.shape, plain=left.plain and right.plain)


def view(p: Program) -> None:
    """A view, an alias or a copy of a tensor in scope."""
    source = p.pick()
    if source is None:
        return create(p)
    # suffix -> (shape, contiguous); ``view`` only of a contiguous tensor
    choices = {MATRIX: {".t()": (MATRIX, False), ".view(9)": (FLAT, True),
                        ".reshape(9)": (FLAT, True), "[0]": (ROW, True),
                        "[:, 1]": (ROW, False), ".transpose(0, 1)": (MATRIX, False),
                        ".flatten()": (FLAT, True), ".diagonal()": (ROW, False)},
               ROW: {".view(3)": (ROW, True), "[1:]": (None, True),
                     ".unsqueeze(0)[0]": (ROW, True)},
               FLAT: {".view(3, 3)": (MATRIX, True), "[:3]": (ROW, True),
                      ".reshape(3, 3)": (MATRIX, True)}}
    options = {**choices[source.shape], ".detach()": (source.shape, source.contiguous),
               ".data": (source.shape, source.contiguous), ".clone()": (source.shape, True)}
    if not source.contiguous:
        options = {k: v for k, v in options.items() if not k.startswith((".view", ".flatten"))}
    suffix = p.rng.choice(sorted(options))
    shape, contiguous = options[suffix]
    if suffix in (".reshape(9)", ".reshape(3, 3)"):
        contiguous = True  # a copy where the source is not contiguous
    else:
        contiguous = contiguous and source.contiguous
    result = p.fresh("v")
    p.emit(f"{result} = {source.name}{suffix}")
    if shape is not None:
        p.bind(result, shape, contiguous=contiguous,
               plain=suffix in (".detach()", ".data") or source.plain,
               via_data=suffix == ".data" or (source.via_data and suffix != ".clone()"))


def inplace(p: Program) -> None:
    """An in-place write: a method, an augmented or an item assignment, maybe via .data."""
    target = p.pick(leaf_grad=False) if p.rng.random() < 0.75 else p.pick()
    if target is None:
        return create(p)
    through = p.rng.choice(["", "", "", ".data"]) if not target.plain else ""
    name = f"{target.name}{through}"
    silent = bool(through) or target.via_data
    if silent:  # a silent write must change the values whatever they are: numbers only
        return _silent_write(p, name, target)
    form = p.rng.random()
    if form < 0.5:
        method = p.rng.choice(sorted(INPLACE))
        if method == "copy_":  # fresh values: a copy from an alias would change nothing
            argument = f"torch.rand({SHAPES[target.shape]})"
        elif method == "clamp_":
            argument = "min=0.1"
        elif method == "fill_":
            argument = p.rng.choice(["0.0", "1.0"])
        elif INPLACE[method]:
            argument = operand(p, target.shape)
        else:
            argument = ""
        p.emit(f"{name}.{method}({argument})")
    elif form < 0.8:
        p.emit(f"{name} {p.rng.choice(AUGMENTED)} {operand(p, target.shape)}")
    else:
        index = {MATRIX: "0", ROW: "1", FLAT: "2"}[target.shape]
        value = p.rng.choice(["1.0", "0.0"])
        p.emit(f"{name}[{index}] = {value}" if p.rng.random() < 0.6
               else f"{name}[{index}:] = {value}")


def _silent_write(p: Program, name: str, target: Var) -> None:
    """A write through ``.data`` that changes every value it writes, and its sign (an
    operand that is a tensor could be zero, ``relu_`` leaves positive values as they are,
    and ``relu`` and ``abs`` read only the sign of what they saved: the write would then
    corrupt no gradient, which no linter can know)."""
    p.emit(p.rng.choice([f"{name}.mul_(-1.5)", f"{name}.sub_(5.0)", f"{name} -= 5",
                         f"{name} *= -2", f"{name}.neg_()",
                         f"{name}.copy_(-2 - torch.rand({SHAPES[target.shape]}))",
                         f"{name}[{'0' if target.shape == MATRIX else '1'}] = -3.0"]))


def no_grad_update(p: Program) -> None:
    """An in-place update of a leaf under ``torch.no_grad()`` (safe: manual SGD)."""
    leaf = p.pick(leaf_grad=True)
    if leaf is None:
        return create(p)
    p.emit("with torch.no_grad():")
    p.indent += 1
    p.emit(p.rng.choice([f"{leaf.name}.mul_(0.9)", f"{leaf.name} -= 0.01",
                         f"{leaf.name}.add_(0.1)", f"{leaf.name}.clamp_(min=0.5)"]))
    p.indent -= 1


def layer(p: Program) -> None:
    """Build a layer (maybe a Sequential with inplace flags) and call it on a matrix."""
    source = p.pick(MATRIX)
    if source is None:
        return create(p)
    flag = p.rng.choice(["", "inplace=True", "inplace=False"])

    def activation() -> str:
        # a silent write must change the values: on [0.5, 1.5) only these do
        text = p.rng.choice(ACTIVATIONS if not source.via_data
                            else ("nn.SiLU({})", "nn.Sigmoid()", "nn.Tanh()"))
        if "{}" not in text:
            return text
        if text.startswith("nn.LeakyReLU"):
            return text.format(f", {flag}" if flag else "")
        return text.format(flag)

    name = p.fresh("layer")
    kind = p.rng.random()
    if kind < 0.35:
        parts = ["nn.Linear(3, 3)"]
    elif kind < 0.6:
        parts = [activation()]
    else:
        parts = [p.rng.choice(["nn.Linear(3, 3)", activation(), "nn.LayerNorm(3)"])
                 for _ in range(p.rng.randint(2, 3))]
    p.emit(f"{name} = {parts[0]}" if len(parts) == 1
           else f"{name} = nn.Sequential({', '.join(parts)})")
    result = p.fresh("h")
    p.emit(f"{result} = {name}({source.name})")
    learned = any(part.startswith(("nn.Linear", "nn.LayerNorm")) for part in parts)
    p.bind(result, MATRIX, plain=source.plain and not learned)
    p.layers.append(name)


def helper_call(p: Program) -> None:
    """Call a helper defined at the top of the program (it may write its argument)."""
    if not p.helpers:
        return unary(p)
    name, kind = p.rng.choice(p.helpers)
    source = p.pick(MATRIX)
    if source is None:
        return create(p)
    if source.via_data and name == "rectified_in_place":  # relu_ would change nothing
        return unary(p)
    result = p.fresh("h")
    if kind == "module":
        instance = p.fresh("block")
        p.emit(f"{instance} = {name}()")
        p.blocks.append(instance)
        p.emit(f"{result} = {instance}({source.name})")
    else:
        p.emit(f"{result} = {name}({source.name})")
    p.bind(result, MATRIX, plain=source.plain and name not in LEARNED_HELPERS)


def optimizer_step(p: Program) -> None:
    """An optimizer over some leaves, stepped (after a backward of its own, or not)."""
    leaves = [v for v in p.tensors if v.leaf_grad]
    if not leaves:
        return create(p)
    chosen = p.rng.sample(leaves, min(len(leaves), p.rng.randint(1, 2)))
    optimizer = p.fresh("opt")
    kind = p.rng.choice(["SGD", "Adam"])
    p.emit(f"{optimizer} = torch.optim.{kind}([{', '.join(v.name for v in chosen)}], lr=0.1)")
    # a backward reaching its parameters first: a step changes only parameters that have a
    # gradient, and gradguard knows only whether some backward ran before, not which
    # leaves it reached
    loss = " + ".join(f"{v.name}.sum()" for v in chosen)
    p.emit(f"({loss}).backward()")
    p.emit(f"{optimizer}.step()")


def block(p: Program, depth: int) -> None:
    """A loop or a branch around a few statements."""
    if depth > 1:
        return statement(p, depth)
    header = p.rng.choice(["for _ in range(2):", "if True:", "if False:\n    pass\nelse:"])
    for line in header.split("\n"):
        p.emit(line)
    p.indent += 1
    for _ in range(p.rng.randint(1, 3)):
        statement(p, depth + 1)
    p.indent -= 1  # every block runs (the loop twice, the else branch): its names stay


STATEMENTS = [(create, 2), (unary, 4), (binary, 4), (matmul, 2), (view, 3), (inplace, 5),
              (no_grad_update, 1), (layer, 2), (helper_call, 2), (optimizer_step, 1),
              (block, 1)]


def statement(p: Program, depth: int = 0) -> None:
    choose = p.rng.choices([s for s, _ in STATEMENTS], [w for _, w in STATEMENTS])[0]
    if choose is block:
        block(p, depth)
    else:
        choose(p)


HELPERS = {  # name -> (kind, definition): functions, and nn.Module classes
    "scaled": ("function", """
def scaled(x):
    return x * 2
"""),
    "squashed": ("function", """
def squashed(x):
    return torch.sigmoid(x)
"""),
    "doubled_in_place": ("function", """
def doubled_in_place(x):
    x.mul_(2)
    return x
"""),
    "rectified_in_place": ("function", """
def rectified_in_place(x):
    return x.relu_()
"""),
    "Gate": ("module", """
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        return torch.sigmoid(self.proj(x))
"""),
    "Squeeze": ("module", """
class Squeeze(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(x * 1)
"""),
    "Scale": ("module", """
class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))

    def forward(self, x):
        x.mul_(2)
        return x * self.weight
"""),
}


LEARNED_HELPERS = frozenset({"Gate", "Scale"})  # modules with parameters of their own


def finish(p: Program) -> None:
    """One backward (or autograd.grad) over the tensors that may require grad."""
    live = [v for v in p.tensors if not v.plain]
    if not live:
        return
    chosen = p.rng.sample(live, min(len(live), p.rng.randint(1, 3)))
    chosen += [v for v in live if v.name in p.reached and v not in chosen]
    loss = " + ".join(f"{v.name}.sum()" for v in chosen)
    leaves = [v.name for v in p.tensors if v.leaf_grad]
    if leaves and p.rng.random() < 0.2:
        # every leaf and parameter as an input, as for a model's parameters: autograd.grad
        # runs only the nodes on a path to its inputs, and gradguard does not follow which
        # those are; the gradients go to .grad, where the oracle compares them
        inputs = leaves + [f"*{name}.parameters()" for name in p.layers + p.blocks]
        p.emit(f"inputs = [{', '.join(inputs)}]")
        p.emit(f"for leaf, grad in zip(inputs, torch.autograd.grad({loss}, inputs, "
               "allow_unused=True)):")
        p.emit("    leaf.grad = grad")
    else:
        p.emit(f"({loss}).backward()")


# ----------------------------------------------------------------------------- repeated blocks


def residual_class(squash: bool) -> str:
    """The block class: torchvision's ``BasicBlock`` on 3 features. With ``squash``, an
    instance built with ``squash=True`` has the bug: ``out *= 2`` writes the output its
    ``sigmoid`` saved (written only where some block is built so, since a line that never
    runs is none torch can confirm)."""
    flag = (", squash=False", "\n        self.squash = squash") if squash else ("", "")
    bug = """
        if self.squash:
            out = torch.sigmoid(out)
            out *= 2""" if squash else ""
    return f"""class Residual(nn.Module):
    def __init__(self, downsample=None{flag[0]}):
        super().__init__()
        self.fc1 = nn.Linear(3, 3)
        self.bn1 = nn.BatchNorm1d(3)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Linear(3, 3)
        self.bn2 = nn.BatchNorm1d(3)
        self.downsample = downsample{flag[1]}

    def forward(self, x):
        identity = x
        out = self.fc1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.fc2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out){bug}
        return out
"""


def make_layer_function(squash: bool) -> str:
    """torchvision's ``ResNet._make_layer`` as a function: the first block downsamples;
    with ``squash``, the block at ``squash_at`` has the bug."""
    if not squash:
        return """def make_layer(blocks):
    layers = [Residual(downsample=nn.Linear(3, 3))]
    for _ in range(1, blocks):
        layers.append(Residual())
    return nn.Sequential(*layers)
"""
    return """def make_layer(blocks, squash_at):
    layers = [Residual(downsample=nn.Linear(3, 3), squash=squash_at == 0)]
    for i in range(1, blocks):
        layers.append(Residual(squash=i == squash_at))
    return nn.Sequential(*layers)
"""


# how the blocks are put together: a Sequential of instances written out, a ModuleList
# (of instances written out, or of a comprehension's) run by a loop, ``make_layer``
SEQUENTIAL, MODULE_LIST, COMPREHENSION, MAKE_LAYER_CALL = \
    "sequential", "module list", "comprehension", "make_layer"
BLOCK_SHAPES = (SEQUENTIAL, MODULE_LIST, COMPREHENSION, MAKE_LAYER_CALL)
REPEATED_SHARE = 0.25  # the share of the programs that have repeated blocks


@dataclass
class RepeatedBlocks:
    """Several instances of one residual block class (``residual_class``), put together as
    ``shape`` says, run once on a matrix of the program, after its ``at``-th statement.
    ``squashed``: the block whose ``squash`` flag adds the bug (``out *= 2`` writes what
    its ``sigmoid`` saved), or None; ``downsample``: the block with a ``downsample``
    layer (``make_layer``'s first), or None.

    Drawn from a random stream of its own (``draw``), so the programs without repeated
    blocks are what they were before the generator knew them."""

    rng: random.Random
    shape: str
    blocks: int
    at: int
    squashed: int | None
    downsample: int | None

    @classmethod
    def draw(cls, seed: int, statements: int) -> "RepeatedBlocks | None":
        """The repeated blocks of ``seed``'s program (of ``statements`` statements), if any."""
        rng = random.Random(f"repeated blocks {seed}")
        if rng.random() >= REPEATED_SHARE:
            return None
        shape, blocks = rng.choice(BLOCK_SHAPES), rng.randint(2, 3)
        squashed = rng.randrange(blocks) if rng.random() < 0.5 else None
        downsample = 0 if shape == MAKE_LAYER_CALL \
            else rng.randrange(blocks) if shape != COMPREHENSION and rng.random() < 0.5 else None
        return cls(rng, shape, blocks, rng.randint(0, statements), squashed, downsample)

    def definitions(self) -> list[str]:
        """What the program's header defines for them."""
        squash = self.squashed is not None
        return [residual_class(squash)] + ([make_layer_function(squash)]
                                           if self.shape == MAKE_LAYER_CALL else [])

    def instance(self, index: int) -> str:
        """The constructor call of block ``index``, written out."""
        arguments = (["downsample=nn.Linear(3, 3)"] if index == self.downsample else []) \
            + (["squash=True"] if index == self.squashed else [])
        return f"Residual({', '.join(arguments)})"

    def emit(self, p: Program) -> None:
        """Build the blocks and run them on a matrix of ``p`` (a new leaf if none: blocks
        defined and never run would be a class whose lines torch never runs)."""
        matrices = [v for v in p.tensors if v.shape == MATRIX]
        if matrices:
            source = self.rng.choice(matrices)
        else:
            source = p.bind(p.fresh("w"), MATRIX, leaf_grad=True)
            p.emit(f"{source.name} = torch.rand(3, 3, requires_grad=True)")
        stack, result = p.fresh("stack"), p.fresh("h")
        written_out = ", ".join(self.instance(i) for i in range(self.blocks))
        if self.shape == SEQUENTIAL:
            p.emit(f"{stack} = nn.Sequential({written_out})")
        elif self.shape == MAKE_LAYER_CALL:
            squash = f", squash_at={self.squashed}" if self.squashed is not None else ""
            p.emit(f"{stack} = make_layer({self.blocks}{squash})")
        else:
            listed = f"[{written_out}]" if self.shape == MODULE_LIST else \
                f"[Residual(squash=i == {self.squashed}) for i in range({self.blocks})]" \
                if self.squashed is not None else f"[Residual() for _ in range({self.blocks})]"
            p.emit(f"{stack} = nn.ModuleList({listed})")
        if self.shape in (MODULE_LIST, COMPREHENSION):
            block = p.fresh("block")
            p.emit(f"{result} = {source.name}")
            p.emit(f"for {block} in {stack}:")
            p.emit(f"    {result} = {block}({result})")
        else:
            p.emit(f"{result} = {stack}({source.name})")
        p.bind(result, MATRIX)
        p.layers.append(stack)
        p.reached.append(result)


def generate(seed: int, statements: int | None = None) -> str:
    """The program of ``seed``: a few helpers, ``statements`` statements (among them, in
    some programs, repeated blocks), then a backward."""
    p = Program(random.Random(seed))
    header = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", ""]
    for name in p.rng.sample(sorted(HELPERS), p.rng.randint(0, 3)):
        kind, text = HELPERS[name]
        header += [text.lstrip("\n")]
        p.helpers.append((name, kind))
    p.emit("torch.manual_seed(0)")
    for _ in range(2):
        create(p)
    count = statements or p.rng.randint(4, 14)
    repeated = RepeatedBlocks.draw(seed, count)
    if repeated is not None:
        header += repeated.definitions()
    for index in range(count + 1):
        if repeated is not None and index == repeated.at:
            repeated.emit(p)
        if index < count:
            statement(p)
    finish(p)
    return "\n".join(header + p.lines) + "\n"


if __name__ == "__main__":
    print(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
