"""Time gradguard on generated programs of growing size and nesting depth.

    python bench/bench_generated.py                        # the default grid, 2 s a file at most
    python bench/bench_generated.py --sizes 300 1200 --depths 6 9 --seeds 0 1 2
    python bench/bench_generated.py --write /tmp/programs   # keep the generated files too

Each program is valid Python built from its seed (it compiles; it need not run): helpers
that call each other and themselves, ``nn.Module`` classes, training functions and
module-level code whose blocks (``for`` over ranges, parameters and lists, ``while True``
with ``break``, ``if`` on tensor conditions, ``try``, ``with torch.no_grad()``, ``match``,
local functions and classes) nest up to the requested depth, around comprehensions,
lambdas, walrus, tensors that require grad, in-place and ``.data`` writes, ``backward()``
and optimizer steps. The seed also sets the mix of those shapes.

Every ``check_source`` runs, and is timed, in a worker process; one that runs past
``--timeout`` is killed and shown as ``>TIMEOUT``. Prints each program's size, depth,
seed, lines, seconds and findings, the slowest time for each size and depth, and the
programs over ``--limit``. The exit status is 1 when any program takes longer than
``--limit`` seconds (or cannot be checked), so the script can serve as a check.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import random
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from gradguard.analysis.checker import check_source
from gradguard.domain.findings import DECODE_ERROR, INTERNAL_ERROR, SYNTAX_ERROR

WIDTH = 8  # the side of every generated tensor and layer
ENGINE_CODES = (SYNTAX_ERROR, DECODE_ERROR, INTERNAL_ERROR)


# ----------------------------------------------------------------------------- generator
SIMPLE = ("leaf", "arithmetic", "inplace", "item_write", "augmented", "data_write",
          "backward", "optimizer", "layer_call", "comprehension", "lambda", "walrus",
          "helper_call", "alias_write", "append", "exit")
COMPOUND = ("for_range", "for_parameters", "for_list", "while_true", "while_count",
            "if_tensor", "try", "grad_mode", "match", "local_def", "local_class")
NEEDS_DEPTH = {"local_class": 2}  # levels a compound needs: a class, then its methods


@dataclass(frozen=True)
class Mix:
    """How often each shape appears; drawn from the seed alone, so that one seed has the
    same character at every size and depth."""

    simple: dict
    compound: dict
    nesting: float  # the chance that a statement, where nesting is allowed, is a block

    @staticmethod
    def of(seed: int) -> "Mix":
        rng = random.Random(seed)
        return Mix(simple={kind: rng.choice((0.3, 1.0, 1.0, 3.0)) for kind in SIMPLE},
                   compound={kind: rng.choice((0.3, 1.0, 1.0, 3.0)) for kind in COMPOUND},
                   nesting=rng.uniform(0.2, 0.45))


@dataclass
class Scope:
    """What the code being written can refer to. Blocks of one function share the lists
    (Python scopes are flat); a new function or class body starts its own."""

    tensors: list
    in_function: bool = False
    in_loop: bool = False
    layers: list = field(default_factory=lambda: ["model"])
    optimizers: list = field(default_factory=lambda: ["opt"])
    lists: list = field(default_factory=lambda: ["outs"])


class ProgramGenerator:
    """One program: ``ProgramGenerator(size, depth, seed).program()``.

    ``block`` writes statements until its line budget is spent; a compound statement
    takes part of the budget for its bodies and one level of the depth. One chain of
    blocks in every training function and module-level section reaches the full depth.
    """

    def __init__(self, size: int, depth: int, seed: int) -> None:
        self.size, self.depth, self.seed = size, depth, seed
        self.mix = Mix.of(seed)
        self.rng = random.Random(f"{seed}/{size}/{depth}")
        self.lines: list[str] = []
        self.serial = itertools.count(1)
        self.module_scope = Scope(tensors=[])  # what module-level code has bound
        self.helpers: list[str] = []  # module functions taking two tensors
        self.classes: list[str] = []  # module nn.Module classes taking WIDTH
        self.entry_points: list[str] = []

    def program(self) -> str:
        self.preamble()
        items = (self.helper, self.module_class, self.training_function, self.module_section)
        while len(self.lines) < self.size:
            if not self.helpers:
                item = self.helper
            elif not self.entry_points:
                item = self.training_function
            else:
                item = self.rng.choices(items, weights=(2, 1, 3, 1))[0]
            self.write(0, "")
            budget = min(self.size - len(self.lines), self.rng.randint(30, 150))
            item(max(budget, 2 * self.depth + 4))
        return self.finish()

    def preamble(self) -> None:
        """The docstring, the imports and the module-level names every program starts
        with (other programs built from these parts start with them too)."""
        self.write(0, f'"""Generated by bench/bench_generated.py: size {self.size}, '
                      f'depth {self.depth}, seed {self.seed}."""',
                   "import torch", "import torch.nn as nn", "import torch.nn.functional as F",
                   "")
        self.prologue(0, self.module_scope)

    def finish(self) -> str:
        """Call every training function under ``__main__``; return the program's text."""
        calls = [f"{name}(model, opt, [x, w])" for name in self.entry_points]
        self.write(0, "", 'if __name__ == "__main__":')
        self.write(1, *(calls or ["pass"]))
        return "\n".join(self.lines) + "\n"

    # ------------------------------------------------------------------- plumbing
    def write(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line if line else "" for line in lines)

    def name(self, stem: str) -> str:
        return f"{stem}{next(self.serial)}"

    def tensor(self, scope: Scope) -> str:
        return self.rng.choice(scope.tensors)

    def new_tensor(self, scope: Scope, stem: str = "t") -> str:
        name = self.name(stem)
        scope.tensors.append(name)
        return name

    def condition(self, scope: Scope) -> str:
        a, b = self.tensor(scope), self.tensor(scope)
        return self.rng.choice((
            f"{a}.sum() > 0", f"({a} > {b}).any()", f"{a}.norm() < {self.rng.randint(1, 9)}",
            f"{a}.requires_grad and {b}.grad is not None", f"{a}.mean().item() > 0.5",
            f"not torch.isfinite({a}).all()"))

    def split(self, budget: int, parts: int) -> list[int]:
        """``budget`` lines shared among ``parts`` bodies, at least two lines each."""
        cuts = sorted(self.rng.randint(0, max(budget, 0)) for _ in range(parts - 1))
        return [max(2, high - low) for low, high in zip([0, *cuts], [*cuts, budget])]

    # ------------------------------------------------------------------- blocks
    def block(self, scope: Scope, indent: int, depth: int, budget: int,
              reach: bool = False) -> None:
        """Statements at ``indent`` until ``budget`` lines are written, nesting at most
        ``depth`` more levels; with ``reach``, one chain of blocks nests all the way."""
        start = len(self.lines)
        reach_at = self.rng.randint(0, 2) if reach and depth > 0 else None
        index = 0
        while index == 0 or len(self.lines) - start < budget \
                or (reach_at is not None and index <= reach_at):
            remaining = budget - (len(self.lines) - start)
            if index == reach_at:
                self.compound(scope, indent, depth, max(remaining * 2 // 3, 3 * depth), True)
            elif depth > 0 and remaining >= 3 and self.rng.random() < self.mix.nesting:
                self.compound(scope, indent, depth, self.rng.randint(2, max(2, remaining * 2 // 3)))
            else:
                self.simple(scope, indent)
            index += 1

    def simple(self, scope: Scope, indent: int) -> None:
        kinds = [kind for kind in SIMPLE if kind != "exit" or scope.in_loop or scope.in_function]
        kind = self.rng.choices(kinds, weights=[self.mix.simple[k] for k in kinds])[0]
        self.write(indent, *getattr(self, f"simple_{kind}")(scope))

    def compound(self, scope: Scope, indent: int, depth: int, budget: int,
                 reach: bool = False) -> None:
        kinds = [kind for kind in COMPOUND if NEEDS_DEPTH.get(kind, 1) <= depth]
        kind = self.rng.choices(kinds, weights=[self.mix.compound[k] for k in kinds])[0]
        getattr(self, f"compound_{kind}")(scope, indent, depth, max(budget - 1, 2), reach)

    def prologue(self, indent: int, scope: Scope) -> None:
        """The names every section starts from: leaves, a model, its optimizer, a list."""
        scope.tensors += ["x", "w"]
        self.write(indent,
                   f"x = torch.randn({WIDTH}, {WIDTH}, requires_grad=True)",
                   f"w = torch.zeros({WIDTH}, {WIDTH}, requires_grad=True)",
                   f"model = nn.Sequential(nn.Linear({WIDTH}, {WIDTH}), nn.ReLU(inplace=True), "
                   f"nn.Linear({WIDTH}, {WIDTH}))",
                   self.rng.choice(("opt = torch.optim.SGD(model.parameters(), lr=0.01)",
                                    "opt = torch.optim.Adam([w, *model.parameters()], lr=1e-3)")),
                   "outs = []",
                   'mode = "train"')

    # ------------------------------------------------------------------- simple statements
    def simple_leaf(self, scope: Scope) -> list[str]:
        name = self.new_tensor(scope, "leaf")
        return [self.rng.choice((
            f"{name} = torch.randn({WIDTH}, {WIDTH}, requires_grad=True)",
            f"{name} = torch.ones({WIDTH}, {WIDTH}).requires_grad_()",
            f"{name} = nn.Parameter(torch.zeros({WIDTH}, {WIDTH}))",
            f"{name} = torch.randn({WIDTH}, {WIDTH})"))]

    def simple_arithmetic(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        name = self.new_tensor(scope)
        return [f"{name} = " + self.rng.choice((
            f"{a} * {b} + 1", f"torch.relu({a} @ {b})", f"F.gelu({a}) - {b}.exp()",
            f"{a}.sigmoid() * {b}", f"({a} ** 2).mean() + {b}.sum()",
            f"torch.tanh({a}) if {b}.sum() > 0 else {a}.clone()", f"{a}.t() @ {b}.tanh()"))]

    def simple_inplace(self, scope: Scope) -> list[str]:
        return [self.tensor(scope) + self.rng.choice((
            ".add_(1)", ".mul_(0.5)", ".clamp_(min=0)", ".relu_()", ".zero_()", ".sigmoid_()"))]

    def simple_item_write(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        return [self.rng.choice((f"{a}[0] = 1", f"{a}[:, 1] = {b}[0]", f"{a}[{a} > 0] = 0"))]

    def simple_augmented(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        return [self.rng.choice((f"{a} *= 2", f"{a} += {b}", f"{a} -= 0.1 * {b}"))]

    def simple_data_write(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        return [self.rng.choice((f"{a}.data = {b}.detach()", f"{a}.data.mul_(0.9)",
                                 f"{a}.data[0] = 0", f"{a}.data.copy_({b}.data)"))]

    def simple_backward(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        loss = self.name("loss")
        retain = self.rng.choice(("", "", "retain_graph=True"))
        return [f"{loss} = ({a} * {b}).sum()", f"{loss}.backward({retain})"]

    def simple_optimizer(self, scope: Scope) -> list[str]:
        opt = self.rng.choice(scope.optimizers)
        if self.rng.random() < 0.2:
            opt = self.name("opt")
            scope.optimizers.append(opt)
            return [f"{opt} = torch.optim.SGD({self.rng.choice(scope.layers)}.parameters(), "
                    "lr=0.1)", f"{opt}.zero_grad()"]
        return [self.rng.choice((f"{opt}.step()", f"{opt}.zero_grad()"))]

    def simple_layer_call(self, scope: Scope) -> list[str]:
        a = self.tensor(scope)
        if self.rng.random() < 0.3:
            layer = self.name("layer")
            scope.layers.append(layer)
            return [f"{layer} = " + self.rng.choice((
                "nn.ReLU(inplace=True)", f"nn.Linear({WIDTH}, {WIDTH})",
                f"nn.Sequential(nn.Linear({WIDTH}, {WIDTH}), nn.ReLU(inplace=True))",
                *(f"{cls}({WIDTH})" for cls in self.classes)))]
        return [f"{self.new_tensor(scope, 'y')} = {self.rng.choice(scope.layers)}({a})"]

    def simple_comprehension(self, scope: Scope) -> list[str]:
        a, b, c = (self.tensor(scope) for _ in range(3))
        name, item = self.name("c"), self.name("v")
        return [f"{name} = " + self.rng.choice((
            f"[{item} * 2 for {item} in ({a}, {b}, {c}) if {item}.sum() > 0]",
            f'{{key: {item}.detach() for key, {item} in zip("abc", ({a}, {b}, {c}))}}',
            f"sum({item}.pow(2).sum() for {item} in {self.rng.choice(scope.layers)}.parameters())",
            f"[[{item} + r for {item} in ({a}, {b})] for r in ({c}, {a})]",
            f"{{{item}.dim() for {item} in {self.rng.choice(scope.lists)}}}"))]

    def simple_lambda(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        function, name = self.name("f"), self.name("m")
        return self.rng.choice((
            [f"{function} = lambda v, s={a}: v * s + 1", f"{name} = {function}({b})"],
            [f"{name} = list(map(lambda v: v.relu(), ({a}, {b})))"],
            [f"{name} = sorted(({a}, {b}), key=lambda v: v.sum().item())"],
            [f"{function} = lambda v: v.add_(1) if v.sum() > 0 else v", f"{function}({a})"]))

    def simple_walrus(self, scope: Scope) -> list[str]:
        a, b = self.tensor(scope), self.tensor(scope)
        bound, name = self.new_tensor(scope, "m"), self.name("z")
        return [self.rng.choice((
            f"{name} = ({bound} := {a}.mean()) * {b}",
            f"{name} = [{bound} for v in ({a}, {b}) if ({bound} := v * 2).sum() > 0]"))]

    def simple_helper_call(self, scope: Scope) -> list[str]:
        if not self.helpers:
            return self.simple_arithmetic(scope)
        a, b = self.tensor(scope), self.tensor(scope)
        return [f"{self.new_tensor(scope, 'h')} = {self.rng.choice(self.helpers)}({a}, {b})"]

    def simple_alias_write(self, scope: Scope) -> list[str]:
        a = self.tensor(scope)
        alias = self.new_tensor(scope, "alias")
        view = self.rng.choice(("view(-1)", "detach()", "t()", "unsqueeze(0)", "narrow(0, 0, 2)"))
        return [f"{alias} = {a}.{view}", f"{alias}.{self.rng.choice(('add_(1)', 'zero_()'))}"]

    def simple_append(self, scope: Scope) -> list[str]:
        a = self.tensor(scope)
        return [f"{self.rng.choice(scope.lists)}.append({a} * 2)"]

    def simple_exit(self, scope: Scope) -> list[str]:
        exits = (["break", "continue"] if scope.in_loop else []) \
            + ([f"return {self.tensor(scope)}"] if scope.in_function else [])
        return [f"if {self.condition(scope)}: {self.rng.choice(exits)}"]

    # ------------------------------------------------------------------- compound statements
    def compound_for_range(self, scope, indent, depth, budget, reach) -> None:
        self.write(indent, f"for {self.name('i')} in range({self.rng.randint(2, 10)}):")
        self.block(replace(scope, in_loop=True), indent + 1, depth - 1, budget, reach)

    def compound_for_parameters(self, scope, indent, depth, budget, reach) -> None:
        parameter = self.new_tensor(scope, "p")
        layer = self.rng.choice(scope.layers)
        self.write(indent, self.rng.choice((
            f"for {parameter} in {layer}.parameters():",
            f"for {self.name('name')}, {parameter} in {layer}.named_parameters():")))
        self.block(replace(scope, in_loop=True), indent + 1, depth - 1, budget, reach)

    def compound_for_list(self, scope, indent, depth, budget, reach) -> None:
        a, b, c = (self.tensor(scope) for _ in range(3))
        item, index, other = self.new_tensor(scope, "e"), self.name("j"), self.name("u")
        header = self.rng.choice((
            f"for {item} in [{a}, {b}, {c}]:",
            f"for {index}, {item} in enumerate({self.rng.choice(scope.lists)}):",
            f"for {item}, {other} in zip(({a}, {b}), ({c}, {a})):"))
        if other in header:
            scope.tensors.append(other)
        self.write(indent, header)
        self.block(replace(scope, in_loop=True), indent + 1, depth - 1, budget, reach)

    def compound_while_true(self, scope, indent, depth, budget, reach) -> None:
        exit_line = f"if {self.condition(scope)}: break"
        self.write(indent, "while True:")
        if self.rng.random() < 0.5:
            self.write(indent + 1, exit_line)
        self.block(replace(scope, in_loop=True), indent + 1, depth - 1, budget - 1, reach)
        self.write(indent + 1, exit_line)

    def compound_while_count(self, scope, indent, depth, budget, reach) -> None:
        counter = self.name("k")
        self.write(indent, f"{counter} = 0", f"while {counter} < {self.rng.randint(2, 10)}:")
        self.block(replace(scope, in_loop=True), indent + 1, depth - 1, budget - 1, reach)
        self.write(indent + 1, f"{counter} += 1")

    def compound_if_tensor(self, scope, indent, depth, budget, reach) -> None:
        first = self.rng.choice((f"if {self.condition(scope)}:",
                                 f"if ({self.name('s')} := {self.tensor(scope)}.norm()) > 1:"))
        headers = [first, *self.rng.choice(
            ([], ["else:"], [f"elif {self.condition(scope)}:", "else:"]))]
        bodies = self.split(budget - len(headers) + 1, len(headers))
        for arm, (header, body) in enumerate(zip(headers, bodies)):
            self.write(indent, header)
            self.block(scope, indent + 1, depth - 1, body, reach and arm == 0)

    def compound_try(self, scope, indent, depth, budget, reach) -> None:
        body, handler, final = self.split(budget - 2, 3)
        self.write(indent, "try:")
        self.block(scope, indent + 1, depth - 1, body, reach)
        self.write(indent, self.rng.choice(("except RuntimeError as err:",
                                            "except (ValueError, KeyError):", "except Exception:")))
        self.block(scope, indent + 1, depth - 1, handler)
        if self.rng.random() < 0.4:
            self.write(indent, "finally:")
            self.block(scope, indent + 1, depth - 1, final)

    def compound_grad_mode(self, scope, indent, depth, budget, reach) -> None:
        self.write(indent, "with " + self.rng.choice((
            "torch.no_grad():", "torch.no_grad():", "torch.enable_grad():",
            "torch.set_grad_enabled(False):", "torch.inference_mode():")))
        self.block(scope, indent + 1, depth - 1, budget, reach)

    def compound_match(self, scope, indent, depth, budget, reach) -> None:
        first, rest = self.name("first"), self.name("rest")
        patterns = ['"train" | "fit"', f'{{"lr": lr, **{rest}}}', f"[{first}, *{rest}]",
                    "int() | float()"]
        cases = self.rng.sample(patterns, self.rng.randint(1, 3)) + ["_"]
        subject = self.rng.choice(("mode", f"{self.tensor(scope)}.dim()",
                                   self.rng.choice(scope.lists)))
        self.write(indent, f"match {subject}:")
        bodies = self.split(budget - len(cases), len(cases))
        for number, (pattern, body) in enumerate(zip(cases, bodies)):
            self.write(indent + 1, f"case {pattern}:")
            self.block(scope, indent + 2, depth - 1, body, reach and number == 0)

    def compound_local_def(self, scope, indent, depth, budget, reach) -> None:
        function, a, b = self.name("inner"), self.tensor(scope), self.tensor(scope)
        self.write(indent, f"def {function}(v, s={a}):")
        closure = self.rng.sample(scope.tensors, min(3, len(scope.tensors)))
        inner = Scope(tensors=["v", "s", *closure], in_function=True, layers=list(scope.layers),
                      optimizers=list(scope.optimizers), lists=list(scope.lists))
        self.block(inner, indent + 1, depth - 1, budget - 2, reach)
        self.write(indent + 1, f"return {self.tensor(inner)}")
        self.write(indent, f"{self.new_tensor(scope, 'r')} = {function}({b})")

    def compound_local_class(self, scope, indent, depth, budget, reach) -> None:
        cls = self.name("Local")
        self.class_definition(indent, cls, depth - 1, budget - 2, reach, scope)
        instance = self.name("inst")
        scope.layers.append(instance)
        self.write(indent, f"{instance} = {cls}({WIDTH})",
                   f"{self.new_tensor(scope, 'y')} = {instance}({self.tensor(scope)})")

    # ------------------------------------------------------------------- module-level items
    def class_definition(self, indent: int, name: str, depth: int, budget: int, reach: bool,
                         outer: Scope) -> None:
        """An ``nn.Module`` with layers, a parameter and a forward whose body nests
        ``depth - 1`` more levels; sometimes (not on the way down) a plain class instead."""
        if not reach and self.rng.random() < 0.25:
            self.write(indent, f"class {name}:",
                       "    def __init__(self, width):",
                       f"        self.avg = torch.zeros(width, {WIDTH})",
                       "    def __call__(self, v):",
                       "        self.avg.mul_(0.9).add_(v.detach())",
                       "        return self.avg")
            return
        self.write(indent, f"class {name}(nn.Module):",
                   "    def __init__(self, width):",
                   "        super().__init__()",
                   "        self.fc = nn.Linear(width, width)",
                   "        self.act = nn.ReLU(inplace=True)",
                   "        self.scale = nn.Parameter(torch.ones(width, width))",
                   "    def forward(self, v):",
                   "        h = self.act(self.fc(v)) * self.scale")
        inner = Scope(tensors=["v", "h", "self.scale", "self.fc.weight"], in_function=True,
                      layers=["self.fc", "self.act", *outer.layers[:2]],
                      optimizers=list(outer.optimizers), lists=list(outer.lists))
        self.block(inner, indent + 2, depth - 1, max(budget - 8, 2), reach)
        self.write(indent + 2, "return h")

    def helper(self, budget: int) -> None:
        """A module function of two tensors; some recurse, most call earlier helpers."""
        name = self.name("helper")
        recursive = self.rng.random() < 0.4
        self.write(0, f"def {name}(a, b{', n=3' if recursive else ''}):")
        if recursive:
            self.write(1, "if n <= 0: return a")
        scope = Scope(tensors=["a", "b"], in_function=True)
        self.block(scope, 1, self.rng.randint(1, self.depth), min(budget, 30))
        calls = [f"{name}({self.tensor(scope)}, b, n - 1)"] if recursive else []
        calls += [f"{other}(a, {self.tensor(scope)})" for other in self.rng.sample(
            self.helpers, min(len(self.helpers), self.rng.randint(0, 2)))]
        self.write(1, f"return {' + '.join([self.tensor(scope), *calls])}")
        self.helpers.append(name)

    def module_class(self, budget: int) -> None:
        name = self.name("Block")
        self.class_definition(0, name, self.depth, min(budget, 60), False, self.module_scope)
        self.classes.append(name)

    def training_function(self, budget: int) -> None:
        name = self.name("train")
        self.write(0, f'def {name}(model, opt, data, mode="train"):')
        scope = Scope(tensors=["data"], in_function=True)
        self.prologue(1, scope)
        self.block(scope, 1, self.depth, budget - 7, reach=True)
        self.write(1, f"return {self.tensor(scope)}")
        self.entry_points.append(name)

    def module_section(self, budget: int) -> None:
        self.block(self.module_scope, 0, self.depth, budget, reach=True)


# ----------------------------------------------------------------------------- timing
def _serve(connection) -> None:
    """The worker's loop: check each program it is sent, send back (seconds, codes)."""
    check_source("import torch\n", "warm-up.py")  # first-use costs are not the program's
    while True:
        request = connection.recv()
        if request is None:
            return
        source, path = request
        start = time.perf_counter()
        findings = check_source(source, path)
        connection.send((time.perf_counter() - start, [finding.code for finding in findings]))


class Worker:
    """A process that runs ``check_source``. One that runs past the timeout (or dies) is
    killed and replaced, so that one runaway file does not block the rest."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.connection, child = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()

    def check(self, source: bytes, path: str, timeout: float) -> Optional[tuple[float, list]]:
        """(seconds, finding codes), or None when it did not finish in ``timeout``."""
        self.connection.send((source, path))
        try:
            if self.connection.poll(timeout):
                return self.connection.recv()
        except EOFError:
            pass  # the worker died (out of memory, stack overflow)
        self.process.kill()
        self.process.join()
        self._start()
        return None

    def close(self) -> None:
        self.connection.send(None)
        self.process.join()


@dataclass
class Result:
    """One program's check: its place in the grid, its length, time and finding codes."""

    size: int
    depth: int
    seed: int
    lines: int
    seconds: Optional[float]  # None: past the timeout
    codes: list

    @property
    def sort_key(self) -> float:
        return float("inf") if self.seconds is None else self.seconds

    @property
    def name(self) -> str:
        return f"gen_s{self.size}_d{self.depth}_r{self.seed}.py"

    def shown(self, timeout: float) -> str:
        return f">{timeout:g}" if self.seconds is None else f"{self.seconds:.2f}"


def run_grid(options, report: Callable[[Result], None]) -> list[Result]:
    results = []
    worker = Worker()
    try:
        for size, depth, seed in itertools.product(options.sizes, options.depths, options.seeds):
            source = ProgramGenerator(size, depth, seed).program()
            compile(source, f"<size {size} depth {depth} seed {seed}>", "exec")  # valid, or raise
            result = Result(size, depth, seed, source.count("\n"), None, [])
            if options.write:
                (options.write / result.name).write_text(source)
            checked = worker.check(source.encode(), result.name, options.timeout)
            if checked is not None:
                result.seconds, result.codes = checked
            results.append(result)
            report(result)
    finally:
        worker.close()
    return results


def summarise(results: list[Result], options) -> bool:
    """Print the slowest time per size and depth and the programs over the limit;
    return whether all are within it."""
    worst = max(results, key=lambda r: r.sort_key)
    print(f"\nslowest of {len(options.seeds)} seed(s), seconds:")
    print("size \\ depth" + "".join(f"{depth:>9}" for depth in options.depths))
    for size in options.sizes:
        row = []
        for depth in options.depths:
            cell = [r for r in results if (r.size, r.depth) == (size, depth)]
            row.append(max(cell, key=lambda r: r.sort_key))
        print(f"{size:>12}" + "".join(f"{r.shown(options.timeout):>9}" for r in row))
    print(f"\nslowest: {worst.shown(options.timeout)} s  {worst.name}")
    broken = [r for r in results if set(r.codes) & set(ENGINE_CODES)]
    for result in broken:
        print(f"engine diagnostics {sorted(set(result.codes) & set(ENGINE_CODES))}: {result.name}")
    over = [r for r in results if r.seconds is None or r.seconds > options.limit]
    print(f"over the {options.limit:g} s limit: {len(over)} of {len(results)}")
    for result in sorted(over, key=lambda r: -r.sort_key):
        where = options.write / result.name if options.write else result.name
        print(f"  {result.shown(options.timeout):>8} s  {where}")
    return not over and not broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 600, 1200, 2400],
                        help="approximate program lengths, in lines")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 4, 6, 9],
                        help="how deep blocks nest")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--limit", type=float, default=2.0,
                        help="seconds a program may take (default 2); over it, exit status 1")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds after which a check is stopped (default 30)")
    parser.add_argument("--write", type=Path, metavar="DIR",
                        help="save the generated programs in DIR")
    options = parser.parse_args()
    if options.write:
        options.write.mkdir(parents=True, exist_ok=True)

    print(f"{'size':>6}{'depth':>6}{'seed':>6}{'lines':>7}{'seconds':>9}{'findings':>10}")

    def report(result: Result) -> None:
        findings = "-" if result.seconds is None else len(result.codes)
        print(f"{result.size:>6}{result.depth:>6}{result.seed:>6}{result.lines:>7}"
              f"{result.shown(options.timeout):>9}{findings:>10}", flush=True)

    results = run_grid(options, report)
    sys.exit(0 if summarise(results, options) else 1)


if __name__ == "__main__":
    main()
