"""The oracle: torch itself proves every ``# expect:`` annotation in ``fixtures/``.

A fixture is a small runnable program.  Lines that the linter must report carry a
trailing ``# expect: GG101`` comment (several codes comma-separated).  A fixture
without annotations is a near-miss: it must run clean, and torch must emit no warning
attributed to the fixture file (a non-leaf ``.grad`` read, ``volatile=``, ...).

An annotation may name an oracle *variant* in brackets, ``# expect: GG304[trains_nothing]``:
the code is still GG304 for the linter (``parse_expectations`` drops the bracket), but
the oracle proves the line with the expectation registered as ``GG304[trains_nothing]``
instead of GG304's default one.  Variants are named after the mode they use.

How a code is proven is looked up in ``EXPECTATIONS`` (key -> ``Expectation``, the key
being ``CODE`` or ``CODE[variant]``).  Every annotated line is proven on its own: the
*base* program for a line is the fixture with every *other* annotated line fixed (each
mode says how a line is fixed; most modes neutralise it, i.e. replace the statement by
``pass``; a line that turns a layer's ``inplace`` flag on, ``nn.ReLU(inplace=True),`` inside
an ``nn.Sequential(...)`` or ``act.inplace = True``, is neutralised by turning the flag off
instead, ``flag_off``, so the statement it is part of still runs).  Finally the fixture
with *every* annotated line fixed must run clean, with no warning attributed to the
fixture file (so no unannotated line misbehaves).

Modes (``MODES``):

* ``raises_here``: the base raises the expected exception, and the innermost traceback
  frame inside the fixture file is the annotated line (torch raised "at once").
* ``raises_later``: the base raises the expected exception *somewhere* (typically at
  ``backward()``); the all-fixed run being clean proves the line is the cause.
* ``warns_here``: running the base emits a warning of the expected category whose message
  contains the expected text, attributed (filename and lineno) to the annotated line.  The
  run may raise only at that same line (a ``None`` ``.grad`` consumed right there).  GG308's
  line is fixed by the ``legacy_noop`` rewrite rather than neutralised (an expectation may
  name its fix).
* ``silent_corruption`` (a ``.data`` write into a tensor a live graph saved): (1) the base
  runs clean; (2) with every ``.data`` read in the file turned into ``.detach()`` (which
  shares the version counter; ``x.data *= k`` becomes ``x.detach().__imul__(k)``) the base
  raises the expected "modified by an inplace operation" error; (3) with the line
  neutralised, that ``.detach()`` program runs clean; (4) the leaf gradients of the base
  differ from those of the line-neutralised run (the write changed a gradient, silently).
* ``equivalent_fix`` (a ``.data`` write that corrupts nothing): the base runs clean; the
  line rewritten as ``with torch.no_grad(): S`` with ``.data`` removed from ``S``
  (``x.data = y`` becomes ``x.copy_(y)``) runs clean and ends with the same tensors (values
  and grads) in the final globals; and with every ``.data`` read on the line replaced by
  ``.data.clone()`` the final tensors differ (the line really writes through ``.data``).
  The rewrite is also how the line is fixed.
* ``silent_change`` (an in-place write through a ``.detach()`` alias, GG303, or into the
  original of one, GG309: either way the other reads the new values): the base runs clean;
  with every ``.detach()`` in the file made ``.detach().clone()`` (the fix) the program runs
  clean and some final tensor differs that neither is named on the line nor shares storage
  with one that is (the write leaked into the original and reached a later reader); and with
  the line neutralised, ``.detach().clone()`` changes none of those tensors (this line's
  write is the leak).
* ``no_gradient`` (a term cut off from autograd): the base runs clean; with ``.data`` /
  ``.detach()`` / ``.detach_()`` removed from the line (the fix; GG310's is ``keep_graph``:
  ``torch.tensor([a, b])`` becomes ``torch.stack([a, b])``, ``torch.tensor(t)`` becomes
  ``(t)``) the program runs clean and some leaf's ``.grad`` differs.  (Whether that gradient is *wanted* is the annotation's
  claim: torch can only prove the line cuts a path a backward would otherwise take.)
* ``never_trained`` (parameters cut off from the loss, GG311): the base runs clean and
  some requires-grad leaf of the final globals (module and optimiser parameters included)
  ends with ``.grad`` None; with ``.data`` / ``.detach()`` removed from the line (and an
  ``nn.Parameter(t)`` made ``(t)``) the
  program runs clean and that leaf has a gradient (the cut alone kept it from training).
* ``trains_nothing`` (a loss re-wrapped as a fresh leaf to silence the GG304 error): the
  base runs clean; every requires-grad leaf in the final globals (module parameters and
  optimiser parameters included; tensors named on the line excluded) has ``.grad`` None or
  zero, and there is at least one; and with the line neutralised the expected error (the
  one the re-wrap silenced) is raised.  Such a line is left as written when fixing.
* ``legacy_noop``: the base runs clean; with ``Variable(x)`` on the line rewritten to
  ``(x)`` (``requires_grad=b`` becomes ``.requires_grad_(b)``, ``volatile=`` dropped) the
  program runs clean and ends with identical tensors (values, grads, requires_grad).  The
  rewrite is how the line is fixed.

"Final tensors" are the ``torch.Tensor`` values in the program's globals, the parameters
and buffers of ``nn.Module`` globals, optimiser parameters, and tensors in global lists,
tuples and dicts; each with its ``.grad`` (read only for leaves and retain_grad tensors).

Silent modes cannot see a *missing* annotation the way a raising mode does (the all-fixed
run is clean anyway), except for GG301's: every near-miss, and every all-fixed program,
that uses ``.data`` must also run clean with ``.data`` -> ``.detach()``, so an unannotated
``.data`` write into a saved tensor is caught.  An unannotated harmless ``.data`` write
(GG302), ``.detach()`` alias write (GG303), cut-off term (GG307) or ``Variable`` (GG308)
is not: torch has nothing to say about those.

Libraries not installed here
----------------------------
A fixture that imports a library gradguard has a Python model of but this environment
cannot install (torchvision, timm, mmcv, learn2learn: their wheels need a CUDA torch or a
compiler) runs with the model, written from the library's source, in the library's place
(``models_of_missing_libraries``: ``libraries.conformance.ModelFinder``). torch then
confirms such a fixture against the model, not against the real library; the model's
probes say how far the model agrees with the library where it is installed.

Folder fixtures
---------------
A fixture may also be a folder, ``fixtures/<CODE>/bug_<name>/`` or ``ok_<name>/``: a
program of several files, ``main.py`` (the entry point) plus the modules it imports
(``models.py``, a subpackage ``pkg/__init__.py`` + ``pkg/layers.py``, ...).  Annotations
may sit in any of its ``.py`` files, subfolders included; an annotated line is a
*location* (file name relative to the folder, line).  Everything above holds per
location: the base program for one is the folder with every *other* annotated location
fixed, in whatever file; the all-fixed folder, and a near-miss folder, must run clean.

A folder is run as ``python main.py`` would run it: its (rewritten) files are written to a
fresh temporary directory, that directory goes first on ``sys.path``, and the folder's own
module names are purged from ``sys.modules`` before and after the run, so every run
imports the files as rewritten for it (``installed``).  ``main.py`` is executed in-process
as ``__main__``.  "Innermost frame inside the fixture", "a warning attributed to the
fixture" and the line a mode compares against mean any file of the folder, compared as
(name in the folder, line).  "Final tensors" are ``main.py``'s globals (what a module keeps
in its own globals is not read; a model built in ``main.py`` is, with its parameters).

Conditional findings
--------------------
A finding on a path that a flag selects (``gradguard.engine.conditions``: the linter reports it
with its condition) is proven on that path: the program takes the flag from its command
line, and its main file names the arguments that select the path in a comment line
``# oracle-argv: --warm-up``; every run of it gets them in ``sys.argv`` (``program_argv``).
A program can also run both paths itself (``for freeze in (True, False):``); then it
needs no arguments.

``Program`` is what the oracle verifies and runs: one file, or a folder.

The annotation parser (``parse_expectations``) does not need torch, so the linter
tests (tests/test_fixtures.py) can use it where torch is not installed.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import os
import re
import shlex
import sys
import tempfile
import tokenize
import traceback
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, Iterator

try:
    import torch
except ImportError:  # only the parser is usable without torch
    torch = None

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_DIR = REPO_ROOT / "fixtures"


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Expectation:
    """How torch must fail (or misbehave) for an annotated line with this code."""

    code: str
    mode: str  # one of MODES
    exc_type: type[BaseException] = Exception  # for warns_here: the warning category
    contains: str = ""  # the message must contain this
    excludes: tuple[str, ...] = ()  # ... and none of these (GG101's text is inside GG102's)
    variant: str = ""  # "" for the code's default expectation, else the bracket name
    fix: str = ""  # how the line is fixed (a key of FIXES); "" for the mode's default

    @property
    def key(self) -> str:
        return f"{self.code}[{self.variant}]" if self.variant else self.code

    def _text_ok(self, msg: str) -> bool:
        return self.contains in msg and not any(x in msg for x in self.excludes)

    def matches(self, exc: BaseException) -> bool:
        return isinstance(exc, self.exc_type) and self._text_ok(str(exc))

    def matches_warning(self, w: "WarningRecord") -> bool:
        return issubclass(w.category, self.exc_type) and self._text_ok(w.message)

    def describe(self) -> str:
        extra = "".join(f" and not {x!r}" for x in self.excludes)
        return f"{self.exc_type.__name__} containing {self.contains!r}{extra}"


MODES = (
    "raises_here",
    "raises_later",
    "warns_here",
    "silent_corruption",
    "equivalent_fix",
    "silent_change",
    "no_gradient",
    "never_trained",
    "trains_nothing",
    "legacy_noop",
)

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_OF_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation"

EXPECTATIONS: dict[str, Expectation] = {}

# How an annotated line is fixed (for the other lines' base, and for the all-fixed run).
FIX_NAMES = ("neutralise", "nograd_rewrite", "strip_detach", "unwrap_variable", "as_written", "keep_graph",
             "non_reentrant")
DEFAULT_FIX = {
    "raises_here": "neutralise",
    "raises_later": "neutralise",
    "warns_here": "neutralise",
    "silent_corruption": "neutralise",
    "silent_change": "neutralise",
    "equivalent_fix": "nograd_rewrite",
    "no_gradient": "strip_detach",
    "never_trained": "strip_detach",
    "legacy_noop": "unwrap_variable",
    "trains_nothing": "as_written",  # no mechanical fix: the line stays as written
}

_VARIANT_RE = re.compile(r"[a-z_]+")


def register(exp: Expectation) -> Expectation:
    if exp.mode not in MODES:
        raise ValueError(f"unknown oracle mode {exp.mode!r}; expected one of {MODES}")
    if exp.variant and not _VARIANT_RE.fullmatch(exp.variant):
        raise ValueError(f"variant {exp.variant!r}: lower-case letters and underscores only")
    if exp.fix and exp.fix not in FIX_NAMES:
        raise ValueError(f"unknown fix {exp.fix!r}; expected one of {FIX_NAMES}")
    EXPECTATIONS[exp.key] = exp
    return exp


register(Expectation("GG101", "raises_here", RuntimeError, LEAF_MSG, excludes=("a view of " + LEAF_MSG,)))
register(Expectation("GG102", "raises_here", RuntimeError, VIEW_OF_LEAF_MSG))

NON_LEAF_FLAG_MSG = "you can only change requires_grad flags of leaf variables"
OUT_ARGUMENT_MSG = "functions with out=... arguments don't support automatic differentiation"

register(Expectation("GG103", "raises_here", RuntimeError, NON_LEAF_FLAG_MSG))
register(Expectation("GG104", "raises_here", RuntimeError, OUT_ARGUMENT_MSG))

SAVED_TENSOR_MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"
MULTI_OUTPUT_VIEW_MSG = (
    "is a view and is being modified inplace. This view is the output of a function that returns multiple views"
)

register(Expectation("GG201", "raises_later", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG202", "raises_later", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG203", "raises_here", RuntimeError, MULTI_OUTPUT_VIEW_MSG))

CUSTOM_FUNCTION_VIEW_MSG = "This view was created inside a custom Function"

register(Expectation("GG204", "raises_later", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG205", "raises_here", RuntimeError, CUSTOM_FUNCTION_VIEW_MSG))
register(Expectation("GG206", "raises_later", RuntimeError, SAVED_TENSOR_MSG))

FREED_GRAPH_MSG = "Trying to backward through the graph a second time"

register(Expectation("GG207", "raises_here", RuntimeError, FREED_GRAPH_MSG))

DEEPCOPY_MSG = "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol"

register(Expectation("GG105", "raises_here", RuntimeError, DEEPCOPY_MSG))

NO_GRAD_FN_MSG = "element 0 of tensors does not require grad and does not have a grad_fn"
NON_LEAF_GRAD_MSG = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
DETACH_VIEW_MSG = "Can't detach views in-place"
DETACHED_SAVED_MSG = "Trying to use a saved tensor that has been detached in-place"
VOLATILE_MSG = "volatile was removed"

register(Expectation("GG301", "silent_corruption", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG302", "equivalent_fix"))
register(Expectation("GG303", "silent_change"))
register(Expectation("GG304", "raises_here", RuntimeError, NO_GRAD_FN_MSG))
register(Expectation("GG304", "trains_nothing", RuntimeError, NO_GRAD_FN_MSG, variant="trains_nothing"))
register(Expectation("GG305", "warns_here", UserWarning, NON_LEAF_GRAD_MSG))
register(Expectation("GG306", "raises_here", RuntimeError, DETACH_VIEW_MSG))
register(Expectation("GG306", "raises_later", RuntimeError, DETACHED_SAVED_MSG, variant="raises_later"))
register(Expectation("GG306", "no_gradient", variant="no_gradient"))
register(Expectation("GG307", "no_gradient"))
register(Expectation("GG307", "no_gradient", variant="checkpoint", fix="non_reentrant"))
register(Expectation("GG308", "warns_here", UserWarning, VOLATILE_MSG, fix="unwrap_variable"))
register(Expectation("GG308", "legacy_noop", variant="legacy_noop"))
register(Expectation("GG309", "silent_change"))
register(Expectation("GG310", "no_gradient", fix="keep_graph"))
register(Expectation("GG311", "never_trained"))


# --------------------------------------------------------------------------- parsing

_CODE = r"[A-Z]+[0-9]+(?:\[[a-z_]+\])?"
_EXPECT_RE = re.compile(rf"\bexpect:\s*({_CODE}(?:\s*,\s*{_CODE})*)")


def parse_annotations(source: str | bytes) -> dict[int, set[str]]:
    """Map line number -> set of expectation keys (``GG304`` or ``GG304[trains_nothing]``).

    Uses ``tokenize`` so a ``#`` inside a string literal is never mistaken for a comment.
    """
    if isinstance(source, str):
        source = source.encode("utf-8")
    result: dict[int, set[str]] = {}
    for tok in tokenize.tokenize(io.BytesIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = _EXPECT_RE.search(tok.string)
        if m:
            keys = {c.strip() for c in m.group(1).split(",")}
            result.setdefault(tok.start[0], set()).update(keys)
    return result


def parse_expectations(source: str | bytes) -> dict[int, set[str]]:
    """Map line number -> set of codes, from ``# expect: CODE[, CODE...]`` comments.

    An oracle variant in brackets (``GG304[trains_nothing]``) is dropped: it is the
    oracle's business, the linter reports the bare code.
    """
    return {line: _codes(keys) for line, keys in parse_annotations(source).items()}


def _codes(keys: set[str]) -> set[str]:
    return {k.split("[", 1)[0] for k in keys}


# --------------------------------------------------------------------------- neutralising


class OracleError(Exception):
    """The fixture is malformed, or torch does not back up its annotations."""


_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
    ast.While, ast.With, ast.AsyncWith, ast.Try,
) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.Match,) if hasattr(ast, "Match") else ())


def _simple_statements(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not isinstance(n, _COMPOUND)]


def neutralise(source: str, lines: set[int] | frozenset[int]) -> str:
    """Replace every simple statement whose span contains one of ``lines`` by ``pass``.

    Only the statement's own text is replaced (so ``if c: w.mul_(2)`` becomes
    ``if c: pass`` and indentation is untouched); a statement spanning k extra lines
    becomes ``pass`` followed by k backslash-continued blank lines, so every line
    number in the program stays the same.
    """
    if not source.endswith("\n"):
        source += "\n"
    tree = ast.parse(source)
    stmts = _simple_statements(tree)
    targets: list[ast.stmt] = []
    for line in sorted(lines):
        hit = [s for s in stmts if s.lineno <= line <= s.end_lineno]
        if not hit:
            raise OracleError(f"line {line}: annotation is not on a simple statement")
        targets.extend(s for s in hit if s not in targets)

    # ast columns are UTF-8 byte offsets: edit the lines as bytes.
    blines = [ln.encode("utf-8") for ln in source.splitlines(keepends=True)]
    for s in sorted(targets, key=lambda s: (s.lineno, s.col_offset), reverse=True):
        first, last = s.lineno - 1, s.end_lineno - 1
        head = blines[first][: s.col_offset]
        tail = blines[last][s.end_col_offset :]
        replacement = b"pass" + b" \\\n" * (last - first)
        merged = (head + replacement + tail).splitlines(keepends=True)
        blines[first : last + 1] = merged
    out = b"".join(blines).decode("utf-8")
    assert out.count("\n") == source.count("\n"), "neutralising changed the line count"
    return out


# --------------------------------------------------------------------------- source rewrites
#
# Every rewrite edits byte ranges given by ast positions and keeps every line number.


class _Src:
    """A source text as bytes, with ast (line, column) positions turned into offsets."""

    def __init__(self, source: str):
        if not source.endswith("\n"):
            source += "\n"
        self.text = source
        self.data = source.encode("utf-8")
        self.tree = ast.parse(source)
        self.starts = [0]
        for ln in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(ln))

    def off(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def start(self, node: ast.AST) -> int:
        return self.off(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> int:
        return self.off(node.end_lineno, node.end_col_offset)

    def seg(self, node: ast.AST) -> bytes:
        return self.data[self.start(node) : self.end(node)]

    def statements_at(self, line: int) -> list[ast.stmt]:
        hit = [s for s in _simple_statements(self.tree) if s.lineno <= line <= s.end_lineno]
        if not hit:
            raise OracleError(f"line {line}: annotation is not on a simple statement")
        return hit

    def apply(self, edits: list[tuple[int, int, bytes]]) -> str:
        """Replace each half-open byte range [a, b) by its bytes; ranges must not overlap."""
        data = self.data
        last = None
        for a, b, rep in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
            if last is not None and b > last:
                raise OracleError("overlapping rewrites")
            data = data[:a] + rep + data[b:]
            last = a
        out = data.decode("utf-8")
        if out.count("\n") != self.text.count("\n"):
            raise OracleError("a rewrite would change the line count")
        return out


def _is_data(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _drop_suffix(src: _Src, node: ast.AST, inner: ast.AST) -> tuple[int, int, bytes]:
    """The edit that turns ``node`` (``inner.data`` / ``inner.detach()``) into ``inner``."""
    if inner.end_lineno != node.end_lineno:
        raise OracleError(f"line {node.lineno}: `{src.seg(node).decode()}` spans lines")
    return (src.end(inner), src.end(node), b"")


def data_to_detach(source: str) -> str:
    """Every ``.data`` read becomes ``.detach()`` (same storage, but the version counter is shared).

    ``X.data op= V`` becomes ``X.detach().__iop__(V)``; ``X.data = Y`` (rebinding the
    storage) is left alone.
    """
    src = _Src(source)
    dunder = {ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__", ast.Div: "__itruediv__",
              ast.Pow: "__ipow__"}
    edits: list[tuple[int, int, bytes]] = []
    skip: set[int] = set()
    for node in ast.walk(src.tree):
        if isinstance(node, ast.AugAssign) and _is_data(node.target):
            name = dunder.get(type(node.op))
            if name is None:
                raise OracleError(f"line {node.lineno}: no in-place dunder for {type(node.op).__name__}")
            base = src.seg(node.target.value)
            edits.append((src.start(node.target), src.start(node.value), base + b".detach()." + name.encode() + b"("))
            edits.append((src.end(node.value), src.end(node.value), b")"))
            skip.update(id(n) for n in ast.walk(node.target))
    for node in ast.walk(src.tree):
        if _is_data(node) and isinstance(node.ctx, ast.Load) and id(node) not in skip:
            a, b = src.end(node) - 4, src.end(node)
            if src.data[a:b] != b"data":
                raise OracleError(f"line {node.lineno}: cannot locate `.data`")
            edits.append((a, b, b"detach()"))
    return src.apply(edits)


def _replace_calls(source: str, old: bytes, new: bytes) -> str:
    """Every ``X.<old>()`` call (no arguments) becomes ``X.<new>``."""
    src = _Src(source)
    edits = []
    for node in ast.walk(src.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
                and not node.keywords and node.func.attr.encode() + b"()" == old):
            a, b = _drop_suffix(src, node, node.func.value)[:2]
            edits.append((a, b, b"." + new))
    return src.apply(edits)


def detach_to_clone(source: str) -> str:
    """Every ``.detach()`` becomes ``.detach().clone()`` (the GG303 fix)."""
    return _replace_calls(source, b"detach()", b"detach().clone()")


PARAMETER_CLASSES = ("nn.Parameter", "torch.nn.Parameter", "Parameter")


def strip_detach(source: str, line: int) -> str:
    """Remove ``.data``, ``.detach()`` and ``.detach_()`` from the statement on ``line``, and
    unwrap ``nn.Parameter(t)`` there to ``(t)``.

    ``h.detach_()`` as a statement becomes the no-op ``h``.  The ``no_gradient`` fix.
    """
    src = _Src(source)
    edits = []
    for stmt in src.statements_at(line):
        for node in ast.walk(stmt):
            if _is_data(node) and isinstance(node.ctx, ast.Load):
                edits.append(_drop_suffix(src, node, node.value))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("detach", "detach_") and not node.args and not node.keywords):
                edits.append(_drop_suffix(src, node, node.func.value))
            elif (isinstance(node, ast.Call) and ast.unparse(node.func) in PARAMETER_CLASSES
                  and len(node.args) == 1 and not node.keywords):
                edits.append((src.start(node), src.start(node.args[0]), b"("))
    if not edits:
        raise OracleError(f"line {line}: no `.data`, `.detach()`, `.detach_()` or "
                          "`nn.Parameter(...)` to remove")
    return src.apply(edits)


def keep_graph(source: str, line: int) -> str:
    """``torch.tensor(...)`` on the statement at ``line`` keeps the graph: ``torch.tensor([a,
    b])`` (a list, tuple or comprehension) becomes ``torch.stack([a, b])``, and
    ``torch.tensor(t)`` becomes ``(t)``.  The ``no_gradient`` fix of GG310."""
    src = _Src(source)
    edits = []
    for stmt in src.statements_at(line):
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.tensor"
                    and len(node.args) == 1 and not node.keywords):
                continue
            data = node.args[0]
            if isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
                edits.append((src.start(node.func), src.end(node.func), b"torch.stack"))
            else:
                edits.append((src.start(node), src.start(data), b"("))
    if not edits:
        raise OracleError(f"line {line}: no `torch.tensor(data)` to rewrite")
    return src.apply(edits)


def non_reentrant(source: str, line: int) -> str:
    """``use_reentrant=True`` on the statement at ``line`` becomes ``use_reentrant=False``:
    the non-reentrant checkpoint records the block's parameter uses like a normal forward.
    The ``no_gradient`` fix of GG307's checkpoint variant."""
    src = _Src(source)
    edits = []
    for stmt in src.statements_at(line):
        for node in ast.walk(stmt):
            if isinstance(node, ast.keyword) and node.arg == "use_reentrant" \
                    and isinstance(node.value, ast.Constant) and node.value.value is True:
                edits.append((src.start(node.value), src.end(node.value), b"False"))
    if not edits:
        raise OracleError(f"line {line}: no `use_reentrant=True` to rewrite")
    return src.apply(edits)


def _sole_statement(src: _Src, line: int) -> ast.stmt:
    stmts = src.statements_at(line)
    if len(stmts) != 1:
        raise OracleError(f"line {line}: {len(stmts)} statements; put the annotated one on its own line")
    s = stmts[0]
    head = src.data[src.starts[s.lineno - 1] : src.start(s)]
    tail = src.data[src.end(s) : src.starts[s.end_lineno]].strip()
    if head.strip() or not (tail == b"" or tail.startswith(b"#")):
        raise OracleError(f"line {line}: the annotated statement must be alone on its line(s)")
    return s


def nograd_rewrite(source: str, line: int) -> str:
    """``S`` -> ``with torch.no_grad(): S'`` with ``.data`` removed (the GG302 fix).

    ``X.data = Y`` becomes ``with torch.no_grad(): X.copy_(Y)``.
    """
    src = _Src(source)
    s = _sole_statement(src, line)
    edits = [(src.start(s), src.start(s), b"with torch.no_grad(): ")]
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_data(s.targets[0]):
        target = s.targets[0]
        edits.append((src.end(target.value), src.start(s.value), b".copy_("))
        edits.append((src.end(s.value), src.end(s.value), b")"))
        scope = [target.value, s.value]
    else:
        scope = [s]
    found = False
    for root in scope:
        for node in ast.walk(root):
            if _is_data(node):
                if isinstance(node.ctx, ast.Store) and not isinstance(s, ast.AugAssign):
                    raise OracleError(f"line {line}: cannot rewrite this assignment to `.data`")
                edits.append(_drop_suffix(src, node, node.value))
                found = True
    if not found and len(scope) == 1:
        raise OracleError(f"line {line}: no `.data` on the line")
    return src.apply(edits)


def data_clone_variant(source: str, line: int) -> str:
    """Every ``.data`` read on the line becomes ``.data.clone()`` (a write through it is lost).

    An assignment ``X.data = Y`` or ``X.data op= Y`` is neutralised instead.
    """
    src = _Src(source)
    s = _sole_statement(src, line)
    if (isinstance(s, ast.Assign) and any(_is_data(t) for t in s.targets)) or (
            isinstance(s, ast.AugAssign) and _is_data(s.target)):
        return neutralise(source, {line})
    edits = [(src.end(n), src.end(n), b".clone()") for n in ast.walk(s) if _is_data(n) and isinstance(n.ctx, ast.Load)]
    if not edits:
        raise OracleError(f"line {line}: no `.data` read on the line")
    return src.apply(edits)


def unwrap_variable(source: str, line: int) -> str:
    """``Variable(x[, requires_grad=b][, volatile=v])`` -> ``(x)[.requires_grad_(b)]`` on ``line``."""
    src = _Src(source)
    calls = []
    for stmt in src.statements_at(line):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "Variable")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "Variable")
            ):
                calls.append(node)
    if not calls:
        raise OracleError(f"line {line}: no `Variable(...)` call")
    edits = []
    for c in calls:
        if any(o is not c and any(i is c for i in ast.walk(o)) for o in calls):
            raise OracleError(f"line {line}: nested Variable() calls")
        if len(c.args) != 1 or any(k.arg not in ("requires_grad", "volatile") for k in c.keywords):
            raise OracleError(f"line {line}: Variable() with arguments the oracle cannot rewrite")
        rep = b"(" + src.seg(c.args[0]) + b")"
        for k in c.keywords:
            if k.arg == "requires_grad":
                rep += b".requires_grad_(" + src.seg(k.value) + b")"
        edits.append((src.start(c), src.end(c), rep))
    return src.apply(edits)


def _inplace_position(call: ast.Call) -> int | None:
    """Where a torch.nn layer's constructor takes ``inplace`` positionally (``nn.ReLU(True)``:
    0, ``nn.Dropout(0.5, True)``: 1), from the class's signature; None for anything else."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    layer = getattr(torch.nn, name, None) if torch is not None and name else None
    if not (isinstance(layer, type) and issubclass(layer, torch.nn.Module)):
        return None
    names = list(inspect.signature(layer.__init__).parameters)[1:]
    return names.index("inplace") if "inplace" in names else None


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def inplace_flags(source: str, line: int, columns: Collection[int] | None = None) -> list[ast.expr]:
    """The ``True``s on ``line`` that turn an ``inplace`` flag on: ``inplace=True`` in a call,
    a layer's positional ``True`` (``nn.ReLU(True)``), ``act.inplace = True``.  ``columns``
    (1-based, in characters, as the linter places a flag's finding: where the layer's call
    or the ``act.inplace = True`` statement starts) keeps only those layers' flags, where
    any of them starts there: ``nn.Sequential(nn.ELU(inplace=True), nn.Hardtanh(inplace=True))``
    has two flags on one line, and a finding is about one of them."""
    src = _Src(source)
    found = []  # (flag, the node it belongs to: the call, or the assignment)
    for stmt in src.statements_at(line):
        single = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        target = stmt.targets[0] if single else None
        if isinstance(target, ast.Attribute) and target.attr == "inplace" and _is_true(stmt.value):
            found.append((stmt.value, stmt))
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            found += [(k.value, node) for k in node.keywords if k.arg == "inplace" and _is_true(k.value)]
            position = _inplace_position(node)
            given = node.args[:position + 1] if position is not None else []
            if given and len(given) == position + 1 and _is_true(given[-1]) \
                    and not any(isinstance(a, ast.Starred) for a in given):
                found.append((given[-1], node))
    found = [(flag, owner) for flag, owner in found if flag.lineno == line]
    if columns:
        text = src.text.splitlines()[line - 1]
        offsets = {len(text[:column - 1].encode("utf-8")) for column in columns}  # ast counts bytes
        chosen = [(flag, owner) for flag, owner in found
                  if owner.lineno == line and owner.col_offset in offsets]
        found = chosen or found
    return [flag for flag, _ in found]


def flag_off(source: str, line: int, columns: Collection[int] | None = None) -> str:
    """Every ``inplace`` flag that ``line`` turns on (of the layers starting at ``columns``
    where any does: ``inplace_flags``) is turned off (``inplace=True`` -> ``inplace=False``):
    the line's layer no longer writes in place, and the statement it is part of (a layer in
    an ``nn.Sequential(...)`` spanning lines) still runs."""
    flags = inplace_flags(source, line, columns)
    if not flags:
        raise OracleError(f"line {line}: no `inplace` flag set to True")
    src = _Src(source)
    return src.apply([(src.start(flag), src.end(flag), b"False") for flag in flags])


# --------------------------------------------------------------------------- programs

MAIN = "main.py"  # a folder fixture's entry point
Loc = tuple[str, int]  # an annotated line: (file name in the program, line)


def program_files(folder: Path) -> list[Path]:
    """The ``.py`` files of a folder fixture, subfolders included (caches and hidden entries skipped)."""
    return sorted(p for p in folder.rglob("*.py")
                  if not any(part.startswith((".", "__pycache__")) for part in p.relative_to(folder).parts))


@dataclass(frozen=True)
class Program:
    """A fixture program: one file, or a folder of files run with ``main.py`` as entry point.

    ``files`` holds (name, source) pairs: a single file's own name, or a folder's files by
    their path relative to the folder (``models.py``, ``pkg/layers.py``).  Rewrites return
    a new ``Program``; it is hashable, so the runs of one verification are cached by it.
    """

    path: str  # the fixture file or folder
    files: tuple[tuple[str, str], ...]
    folder: bool = False

    @classmethod
    def single(cls, source: str, path: str | Path) -> "Program":
        return cls(str(path), ((Path(path).name, source),))

    @classmethod
    def load(cls, path: str | Path) -> "Program":
        path = Path(path)
        if not path.is_dir():
            return cls.single(path.read_text(encoding="utf-8"), path)
        files = tuple((p.relative_to(path).as_posix(), p.read_text(encoding="utf-8")) for p in program_files(path))
        return cls(str(path), files, folder=True)

    @property
    def main(self) -> str:
        return MAIN if self.folder else self.files[0][0]

    def source(self, name: str) -> str:
        return dict(self.files)[name]

    def modules(self) -> set[str]:
        """Top-level module names the files would be imported as (``pkg/layers.py`` -> ``pkg``)."""
        return {name.split("/", 1)[0].removesuffix(".py") for name, _ in self.files}

    def annotations(self) -> dict[Loc, set[str]]:
        return {(name, line): keys for name, source in self.files for line, keys in parse_annotations(source).items()}

    def expectations(self) -> dict[Loc, set[str]]:
        """Like ``annotations``, with the bare codes the linter reports (variants dropped)."""
        return {loc: _codes(keys) for loc, keys in self.annotations().items()}

    def where(self, loc: Loc) -> str:
        return f"{loc[0]}:{loc[1]}" if self.folder else f"line {loc[1]}"

    def text(self, loc: Loc) -> str:
        lines = self.source(loc[0]).splitlines()
        return lines[loc[1] - 1].strip() if 0 < loc[1] <= len(lines) else ""

    def uses(self, text: str) -> bool:
        return any(text in source for _, source in self.files)

    def _rewritten(self, names: set[str], rewrite: Callable[[str, str], str]) -> "Program":
        files = []
        for name, source in self.files:
            if name in names:
                try:
                    source = rewrite(name, source)
                except OracleError as e:
                    raise OracleError(f"{name}: {e}" if self.folder else str(e)) from e
            files.append((name, source))
        return replace(self, files=tuple(files))

    def map(self, rewrite: Callable[[str], str]) -> "Program":
        """Every file rewritten (a whole-program rewrite such as ``data_to_detach``)."""
        return self._rewritten({name for name, _ in self.files}, lambda _, source: rewrite(source))

    def at(self, loc: Loc, rewrite: Callable[[str, int], str]) -> "Program":
        """The file of ``loc`` rewritten by ``rewrite(source, line)``."""
        return self._rewritten({loc[0]}, lambda _, source: rewrite(source, loc[1]))

    def fixed(self, annotations: dict[Loc, set[str]], locs: set[Loc],
              columns: dict[Loc, set[int]] | None = None) -> "Program":
        """Each of ``locs`` fixed as its expectation says (``apply_fixes``, file by file);
        ``columns``: where on each line its findings start, when known (a generated
        program's, judged from the linter's findings), so a flag line's fix turns off only
        their layers' flags."""
        def fix(name: str, source: str) -> str:
            own = {line: keys for (n, line), keys in annotations.items() if n == name}
            starts = {line: cols for (n, line), cols in (columns or {}).items() if n == name}
            return apply_fixes(source, own, {line for n, line in locs if n == name}, starts)
        return self._rewritten({name for name, _ in locs}, fix)

    def run(self, snapshot: bool = False) -> "RunResult":
        return run_program(self, snapshot)


def _neutralise_line(source: str, line: int) -> str:
    return neutralise(source, {line})


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class WarningRecord:
    category: type[Warning]
    message: str
    filename: str
    lineno: int

    def describe(self) -> str:
        return f"{self.category.__name__} at line {self.lineno}: {self.message.splitlines()[0][:100]}"


@dataclass
class TensorState:
    value: object  # torch.Tensor (a detached copy)
    grad: object  # torch.Tensor | None
    requires_grad: bool
    is_leaf: bool
    storage: int | None  # data_ptr of the untyped storage, to find aliases


@dataclass
class RunResult:
    exc: BaseException | None
    frame_line: int | None  # innermost traceback line inside the program
    stdout: str = ""
    warnings: list[WarningRecord] = field(default_factory=list)
    state: dict[str, TensorState] | None = None  # final tensors, when asked for
    path: str = ""  # the file run as __main__
    names: dict[str, str] = field(default_factory=dict)  # filename as run -> its name in the program
    frame_file: str | None = None  # name in the program of frame_line's file
    folder: bool = False

    @property
    def frame(self) -> Loc | None:
        return None if self.frame_line is None else (self.frame_file, self.frame_line)

    def describe(self) -> str:
        if self.exc is None:
            return "ran clean"
        if self.frame_line is None:
            where = "outside the fixture"
        else:
            where = f"{self.frame_file}:{self.frame_line}" if self.folder else f"line {self.frame_line}"
        return f"raised {type(self.exc).__name__} at {where}: {str(self.exc).splitlines()[0] if str(self.exc) else ''}"

    @property
    def own_warnings(self) -> list[WarningRecord]:
        """Warnings attributed to the program's own files."""
        return [w for w in self.warnings if w.filename in self.names]

    def loc_of(self, w: WarningRecord) -> Loc:
        return (self.names[w.filename], w.lineno)


def _require_torch():
    if torch is None:
        raise RuntimeError("the oracle needs torch installed to run fixtures")


@contextlib.contextmanager
def _torch_state_restored():
    """Put back every piece of global torch state a fixture could plausibly change."""
    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    anomaly = torch.is_anomaly_enabled()
    rng = torch.get_rng_state()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        torch.autograd.set_detect_anomaly(anomaly)
        torch.set_rng_state(rng)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        if torch.is_inference_mode_enabled():  # left on by a fixture that entered it by hand
            raise OracleError("fixture left torch.inference_mode enabled")


def _final_tensors(g: dict) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, val in g.items():
        if name.startswith("__"):
            continue
        if isinstance(val, torch.Tensor):
            out[name] = val
        elif isinstance(val, torch.nn.Module):
            for n, p in val.named_parameters():
                out[f"{name}.{n}"] = p
            for n, b in val.named_buffers():
                out[f"{name}.{n}"] = b
        elif isinstance(val, torch.optim.Optimizer):
            for i, group in enumerate(val.param_groups):
                for j, p in enumerate(group["params"]):
                    out[f"{name}.param_groups[{i}][{j}]"] = p
        elif isinstance(val, (list, tuple)):
            for i, x in enumerate(val):
                if isinstance(x, torch.Tensor):
                    out[f"{name}[{i}]"] = x
        elif isinstance(val, dict):
            for k, x in val.items():
                if isinstance(x, torch.Tensor):
                    out[f"{name}[{k!r}]"] = x
    return out


def _snapshot(g: dict) -> dict[str, TensorState]:
    state = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, t in _final_tensors(g).items():
            grad = t.grad if (t.is_leaf or t.retains_grad) else None
            try:
                storage = t.untyped_storage().data_ptr()
            except Exception:  # noqa: BLE001 - sparse and friends have no plain storage
                storage = None
            state[key] = TensorState(
                t.detach().clone(),
                None if grad is None else grad.detach().clone(),
                t.requires_grad,
                t.is_leaf,
                storage,
            )
    return state


def run_source(source: str, path: str | Path, snapshot: bool = False) -> RunResult:
    """Execute ``source`` in-process as ``__main__`` with ``path`` as its filename.

    Every warning is recorded (``simplefilter("always")``); with ``snapshot`` the final
    tensors of the program's globals are copied into ``RunResult.state``.
    """
    _require_torch()
    path = str(path)
    return _execute(source, path, {path: Path(path).name}, snapshot, folder=False)


def run_program(program: Program, snapshot: bool = False) -> RunResult:
    """Run a fixture program: a single file as ``run_source`` does; a folder ``installed``
    in a temporary directory, its ``main.py`` executed in-process as ``__main__``."""
    if not program.folder:
        return run_source(program.source(program.main), program.path, snapshot)
    _require_torch()
    with installed(program) as (main, names):
        return _execute(program.source(program.main), main, names, snapshot, folder=True)


ORACLE_ARGV = re.compile(r"^# oracle-argv:(.*)$", re.MULTILINE)


def program_argv(source: str) -> list[str]:
    """The command-line arguments a fixture runs with: a line ``# oracle-argv: A B`` in its
    main file (a conditional finding's path, selected by a flag the program reads from
    ``sys.argv``: the oracle runs that path); none without one."""
    match = ORACLE_ARGV.search(source)
    return shlex.split(match.group(1)) if match else []


@contextlib.contextmanager
def _argv(argv: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def _execute(source: str, path: str, names: dict[str, str], snapshot: bool, folder: bool) -> RunResult:
    """Execute ``source`` as ``__main__`` from ``path`` (with its ``program_argv``);
    ``names`` are the program's files."""
    code = compile(source, path, "exec", dont_inherit=True)
    g = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    out = io.StringIO()
    exc: BaseException | None = None
    state = None
    with _torch_state_restored(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
            warnings.catch_warnings(record=True) as caught, _argv([path, *program_argv(source)]), \
            models_of_missing_libraries(source):
        warnings.simplefilter("always")
        try:
            exec(code, g)
        except SystemExit as e:
            if e.code not in (None, 0):
                exc = e
        except Exception as e:  # noqa: BLE001 - we want whatever torch raised
            exc = e
        if snapshot:
            state = _snapshot(g)
    recorded = [WarningRecord(w.category, str(w.message), w.filename, w.lineno) for w in caught]
    frame_line = frame_file = None
    if exc is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in names]
        if frames:
            frame_line, frame_file = frames[-1].lineno, names[frames[-1].filename]
    return RunResult(exc, frame_line, out.getvalue(), recorded, state, path, names, frame_file, folder)


@functools.lru_cache(maxsize=None)
def missing_libraries() -> tuple[str, ...]:
    """The libraries gradguard has Python models of that are not installed here."""
    from gradguard.libraries import modelled_libraries
    return tuple(name for name in modelled_libraries() if importlib.util.find_spec(name) is None)


@contextlib.contextmanager
def models_of_missing_libraries(source: str = "") -> Iterator[None]:
    """Within: an import of a ``missing_libraries`` module that ``source`` imports loads
    its model instead (see "Libraries not installed here"); after, the models are
    forgotten again. Only those: an installed library that probes for an optional one
    (transformers asks whether torchvision is there) must not find a model of it."""
    names = tuple(name for name in missing_libraries()
                  if re.search(rf"^\s*(?:from|import)\s+{re.escape(name)}\b", source, re.M))
    if not names:
        yield
        return
    from gradguard.libraries.conformance import ModelFinder
    finder = ModelFinder(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        _forget_modules(set(names))


@contextlib.contextmanager
def installed(program: Program) -> Iterator[tuple[str, dict[str, str]]]:
    """Write ``program``'s files to a fresh temporary directory and make them importable as
    ``python main.py`` would: the directory first on ``sys.path``, the program's own modules
    purged from ``sys.modules`` before and after (so each run imports the files as written
    for it, and leaves none behind; a module of the same name imported before is put back).
    Yields (path of the entry file, {path of each file: its name in the program}).
    """
    why = _shadowing(program)
    if why:
        raise OracleError(why)
    with tempfile.TemporaryDirectory(prefix="gradguard-fixture-") as tmp:
        root = os.path.realpath(tmp)
        names = {}
        for name, source in program.files:
            target = Path(root, *name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source, encoding="utf-8")
            names[str(target)] = name
        saved = _forget_modules(program.modules())
        sys.path.insert(0, root)
        importlib.invalidate_caches()
        bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            yield str(Path(root, *program.main.split("/"))), names
        finally:
            sys.dont_write_bytecode = bytecode
            if root in sys.path:
                sys.path.remove(root)
            for key in [k for k in sys.path_importer_cache if k == root or k.startswith(root + os.sep)]:
                del sys.path_importer_cache[key]
            _forget_modules(program.modules())
            sys.modules.update(saved)


def _shadowing(program: Program) -> str:
    """Why the program's module names cannot go first on ``sys.path`` ("" when they can)."""
    clash = sorted(program.modules() & set(sys.stdlib_module_names))
    return f"module name(s) {clash} would shadow the standard library" if clash else ""


def _forget_modules(tops: set[str]) -> dict:
    """Remove the modules named ``tops`` (and their submodules) from ``sys.modules``; return them."""
    return {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".", 1)[0] in tops}


# --------------------------------------------------------------------------- comparing final tensors


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):
        return True
    return a.is_floating_point() and torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)


def _zero_grad(g) -> bool:
    return g is None or not bool(g.ne(0).any())


def state_diff(a: dict[str, TensorState], b: dict[str, TensorState], requires_grad: bool = False) -> list[str]:
    """Keys (``name`` or ``name.grad``) whose value, grad (or requires_grad) differ, or exist in one run only."""
    diff = []
    for key in sorted(a.keys() | b.keys()):
        if key not in a or key not in b:
            diff.append(key)
            continue
        x, y = a[key], b[key]
        if not _same(x.value, y.value):
            diff.append(key)
        if not _same(x.grad, y.grad):
            diff.append(f"{key}.grad")
        if requires_grad and x.requires_grad != y.requires_grad:
            diff.append(f"{key}.requires_grad")
    return diff


def grad_diff(a: dict[str, TensorState], b: dict[str, TensorState]) -> list[str]:
    """Keys of requires-grad leaves whose ``.grad`` differs between the runs."""
    out = []
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        leafy = (x.is_leaf and x.requires_grad) or (y.is_leaf and y.requires_grad)
        if leafy and not _same(x.grad, y.grad):
            out.append(key)
    return out


def _names_on(source: str, line: int) -> set[str]:
    return {n.id for s in _Src(source).statements_at(line) for n in ast.walk(s) if isinstance(n, ast.Name)}


def _root_name(key: str) -> str:
    return re.split(r"[.\[]", key, maxsplit=1)[0]


# --------------------------------------------------------------------------- verdicts


@dataclass
class Verdict:
    path: str
    expectations: dict[Loc, set[str]]  # (file, line) -> codes
    annotations: dict[Loc, set[str]] = field(default_factory=dict)  # (file, line) -> expectation keys
    problems: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> str:
        return "\n".join([f"{self.path}:"] + [f"  PROBLEM: {p}" for p in self.problems] + [f"  {l}" for l in self.log])


_REWRITES = {"nograd_rewrite": nograd_rewrite, "strip_detach": strip_detach, "unwrap_variable": unwrap_variable,
             "keep_graph": keep_graph, "non_reentrant": non_reentrant}


def fix_of(exp: Expectation) -> str:
    return exp.fix or DEFAULT_FIX[exp.mode]


def apply_fixes(source: str, annotations: dict[int, set[str]], lines: set[int],
                columns: dict[int, set[int]] | None = None) -> str:
    """Fix each of ``lines`` as its expectation says; a line with several fixes is neutralised
    if any of them neutralises, else rewritten by the first rewrite (by name). A line that
    sets a layer's ``inplace`` flag is neutralised by turning the flag off (``flag_off``: of
    the layers where the line's findings start, ``columns``, where known)."""
    to_neutralise = set()
    for line in sorted(lines, reverse=True):
        fixes = {fix_of(EXPECTATIONS[k]) for k in annotations[line]}
        if "neutralise" in fixes:
            starts = (columns or {}).get(line)
            if inplace_flags(source, line, starts):
                source = flag_off(source, line, starts)
            else:
                to_neutralise.add(line)
            continue
        rewrites = sorted(fixes & _REWRITES.keys())
        if rewrites:
            source = _REWRITES[rewrites[0]](source, line)
    return neutralise(source, to_neutralise) if to_neutralise else source


class _Ctx:
    """One fixture's verification: runs are cached, problems and log go to the verdict."""

    def __init__(self, v: Verdict, program: Program):
        self.v, self.program = v, program
        self._runs: dict[tuple[Program, bool], RunResult] = {}

    def run(self, program: Program, snapshot: bool = False) -> RunResult:
        key = (program, snapshot)
        if key not in self._runs:
            self._runs[key] = program.run(snapshot=snapshot)
        return self._runs[key]

    def where(self, loc: Loc) -> str:
        return self.program.where(loc)

    def problem(self, loc: Loc, exp: Expectation, msg: str) -> None:
        self.v.problems.append(f"{self.where(loc)} [{exp.key}]: {msg}")


def _check_raises(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base)
    if r.exc is None:
        c.problem(loc, exp, f"expected {exp.describe()}, but the program ran clean")
    elif not exp.matches(r.exc):
        c.problem(loc, exp, f"expected {exp.describe()}, but it {r.describe()}")
    elif exp.mode == "raises_here" and r.frame != loc:
        raised = c.where(r.frame) if r.frame else "outside the fixture"
        c.problem(loc, exp, f"the expected error was raised at {raised}, not at {c.where(loc)}")


def _check_warns_here(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base)
    hits = [w for w in r.own_warnings if r.loc_of(w) == loc and exp.matches_warning(w)]
    if not hits:
        seen = "; ".join(w.describe() for w in r.own_warnings) or "none"
        c.problem(loc, exp, f"expected a {exp.exc_type.__name__} containing {exp.contains!r} at {c.where(loc)}; "
                            f"warnings from the fixture: {seen}")
    if r.exc is not None and r.frame != loc:
        c.problem(loc, exp, f"the program must run clean or fail at the annotated line, but it {r.describe()}")


def _clean(c: _Ctx, exp: Expectation, loc: Loc, r: RunResult, what: str) -> bool:
    if r.exc is not None:
        c.problem(loc, exp, f"{what} must run clean, but it {r.describe()}")
        return False
    return True


def _check_silent_corruption(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written (the `.data` write is silent)"):
        return
    r2 = c.run(base.map(data_to_detach))
    c.v.log.append(f"{c.where(loc)} with .data -> .detach(): {r2.describe()}")
    if r2.exc is None or not exp.matches(r2.exc):
        got = "ran clean" if r2.exc is None else r2.describe()
        c.problem(loc, exp, f"with `.data` -> `.detach()` expected {exp.describe()} (a saved tensor was hit), "
                            f"but it {got}")
    without = base.at(loc, _neutralise_line)
    if not _clean(c, exp, loc, c.run(without.map(data_to_detach)),
                  "with the line neutralised, the `.detach()` program (proving the line is the cause)"):
        return
    r4 = c.run(without, snapshot=True)
    if not _clean(c, exp, loc, r4, "with the line neutralised, the program"):
        return
    changed = grad_diff(r.state, r4.state)
    c.v.log.append(f"{c.where(loc)}: gradients changed by the write: {changed}")
    if not changed:
        c.problem(loc, exp, "no leaf gradient differs with and without the write: nothing was corrupted")


def _check_equivalent_fix(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written"):
        return
    fixed = base.at(loc, nograd_rewrite)
    r2 = c.run(fixed, snapshot=True)
    c.v.log.append(f"{c.where(loc)} as `{fixed.text(loc)}`: {r2.describe()}")
    if not _clean(c, exp, loc, r2, "the `with torch.no_grad():` rewrite"):
        return
    diff = state_diff(r.state, r2.state)
    if diff:
        c.problem(loc, exp, f"the `with torch.no_grad():` rewrite ends with different tensors: {diff}")
    r3 = c.run(base.at(loc, data_clone_variant), snapshot=True)
    if r3.exc is None and not state_diff(r.state, r3.state):
        c.problem(loc, exp, "with `.data` -> `.data.clone()` on the line nothing changes: the line writes nothing "
                            "through `.data`")


def _check_silent_change(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written (the write is silent)"):
        return
    r2 = c.run(base.map(detach_to_clone), snapshot=True)
    if not _clean(c, exp, loc, r2, "with `.detach()` -> `.detach().clone()` (the fix), the program"):
        return
    names = _names_on(base.source(loc[0]), loc[1])
    aliased = {r.state[n].storage for n in names if n in r.state} - {None}
    leaked = [
        k for k in state_diff(r.state, r2.state)
        if _root_name(k) not in names and (k.endswith(".grad") or k not in r.state or r.state[k].storage not in aliased)
    ]
    c.v.log.append(f"{c.where(loc)}: tensors the alias write changed, beyond the written storage: {leaked}")
    if not leaked:
        c.problem(loc, exp, "`.detach().clone()` changes no tensor beyond the one written: "
                            "no write through a `.detach()` alias reached a later reader")
        return
    without = base.at(loc, _neutralise_line)
    r3 = c.run(without, snapshot=True)
    if not _clean(c, exp, loc, r3, "with the line neutralised, the program"):
        return
    r4 = c.run(without.map(detach_to_clone), snapshot=True)
    if not _clean(c, exp, loc, r4, "with the line neutralised and `.detach().clone()`, the program"):
        return
    elsewhere = [k for k in state_diff(r3.state, r4.state) if k in leaked]
    if elsewhere:
        c.problem(loc, exp, f"without this line, `.detach().clone()` still changes {elsewhere}: "
                            "another write through a `.detach()` alias does it")


def _check_no_gradient(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written"):
        return
    fixed = base.at(loc, _REWRITES[fix_of(exp)])
    r2 = c.run(fixed, snapshot=True)
    c.v.log.append(f"{c.where(loc)} as `{fixed.text(loc)}`: {r2.describe()}")
    if not _clean(c, exp, loc, r2, f"with the line rewritten to keep the graph (`{fixed.text(loc)}`), the program"):
        return
    changed = grad_diff(r.state, r2.state)
    c.v.log.append(f"{c.where(loc)}: gradients the line cuts off: {changed}")
    if not changed:
        c.problem(loc, exp, f"the line rewritten to keep the graph (`{fixed.text(loc)}`) changes no leaf "
                            "gradient: it cut no gradient path")


def _check_never_trained(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written"):
        return
    fixed = base.at(loc, _REWRITES[fix_of(exp)])
    r2 = c.run(fixed, snapshot=True)
    c.v.log.append(f"{c.where(loc)} as `{fixed.text(loc)}`: {r2.describe()}")
    if not _clean(c, exp, loc, r2, f"with the cut removed (`{fixed.text(loc)}`), the program"):
        return
    untrained = [key for key, state in r.state.items()
                 if state.requires_grad and state.is_leaf and state.grad is None
                 and key in r2.state and r2.state[key].grad is not None]
    c.v.log.append(f"{c.where(loc)}: leaves without a gradient only because of the cut: {untrained}")
    if not untrained:
        c.problem(loc, exp, f"no leaf ends without a gradient that gets one with the cut removed "
                            f"(`{fixed.text(loc)}`): the cut leaves nothing untrained")


def _check_trains_nothing(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written (the re-wrap silences the error)"):
        return
    names = _names_on(base.source(loc[0]), loc[1])
    leaves = [k for k, s in r.state.items() if s.requires_grad and s.is_leaf and _root_name(k) not in names]
    trained = [k for k in leaves if not _zero_grad(r.state[k].grad)]
    if not leaves:
        c.problem(loc, exp, "no requires-grad leaf or parameter in the final globals to check")
    elif trained:
        c.problem(loc, exp, f"gradient reached {trained}: the loss does train something")
    r2 = c.run(base.at(loc, _neutralise_line))
    c.v.log.append(f"{c.where(loc)} neutralised: {r2.describe()}")
    if r2.exc is None or not exp.matches(r2.exc):
        got = "ran clean" if r2.exc is None else r2.describe()
        c.problem(loc, exp, f"without the line expected {exp.describe()} (the error it silences), but it {got}")


def _check_legacy_noop(c: _Ctx, exp: Expectation, base: Program, loc: Loc) -> None:
    r = c.run(base, snapshot=True)
    if not _clean(c, exp, loc, r, "the program as written"):
        return
    r2 = c.run(base.at(loc, unwrap_variable), snapshot=True)
    if not _clean(c, exp, loc, r2, "without `Variable(...)`, the program"):
        return
    diff = state_diff(r.state, r2.state, requires_grad=True)
    if diff:
        c.problem(loc, exp, f"`Variable(...)` is not a no-op here; without it these differ: {diff}")


CHECKS = {
    "raises_here": _check_raises,
    "raises_later": _check_raises,
    "warns_here": _check_warns_here,
    "silent_corruption": _check_silent_corruption,
    "equivalent_fix": _check_equivalent_fix,
    "silent_change": _check_silent_change,
    "no_gradient": _check_no_gradient,
    "never_trained": _check_never_trained,
    "trains_nothing": _check_trains_nothing,
    "legacy_noop": _check_legacy_noop,
}
assert set(CHECKS) == set(MODES)


def verify_source(source: str, path: str | Path) -> Verdict:
    """Check a single-file program's annotations against torch; the verdict lists every problem."""
    return verify_program(Program.single(source, path))


def verify_file(path: str | Path) -> Verdict:
    """Check a fixture, a file or a folder."""
    return verify_program(Program.load(path))


def verify_program(program: Program) -> Verdict:
    """Check ``program``'s annotations against torch; the verdict lists every problem."""
    annotations = program.annotations()
    v = Verdict(program.path, program.expectations(), annotations)
    v.problems.extend(_layout_problems(program))
    unknown = sorted({k for keys in annotations.values() for k in keys} - EXPECTATIONS.keys())
    if unknown:
        v.problems.append(f"unknown code(s) {unknown}; the oracle knows {sorted(EXPECTATIONS)}")
    if v.problems:
        return v
    c = _Ctx(v, program)

    if not annotations:
        r = c.run(program)
        v.log.append(f"near-miss: {r.describe()}")
        if r.exc is not None:
            v.problems.append(f"near-miss must run clean but {r.describe()}")
        for w in r.own_warnings:
            v.problems.append(f"near-miss must run without warnings, but torch warned: {w.describe()}")
        _check_no_hidden_data_corruption(c, program, "near-miss")
        return v

    try:
        for loc in sorted(annotations):
            base = program.fixed(annotations, set(annotations) - {loc})
            v.log.append(f"{program.where(loc)} only ({program.text(loc)}): {c.run(base).describe()}")
            for key in sorted(annotations[loc]):
                exp = EXPECTATIONS[key]
                CHECKS[exp.mode](c, exp, base, loc)
        clean = program.fixed(annotations, set(annotations))
    except (OracleError, SyntaxError) as e:
        v.problems.append(f"cannot rewrite the program: {e}")
        return v
    r = c.run(clean)
    v.log.append(f"all annotated lines fixed: {r.describe()}")
    if r.exc is not None:
        v.problems.append(
            f"with every annotated line fixed (neutralised or rewritten) the program must run clean, "
            f"but it {r.describe()}"
        )
    for w in r.own_warnings:
        v.problems.append(f"with every annotated line fixed torch must not warn, but it did: {w.describe()}")
    if r.exc is None:
        _check_no_hidden_data_corruption(c, clean, "with every annotated line fixed, the program")
    return v


def _layout_problems(program: Program) -> list[str]:
    if not program.folder:
        return []
    problems = []
    if MAIN not in dict(program.files):
        problems.append(f"a folder fixture runs its {MAIN}, and there is none")
    why = _shadowing(program)
    if why:
        problems.append(why)
    return problems


def _check_no_hidden_data_corruption(c: _Ctx, program: Program, what: str) -> None:
    """A ``.data`` write into a saved tensor is silent, so a clean run proves nothing: with
    every ``.data`` read made ``.detach()`` the program must still run clean."""
    if not program.uses(".data"):
        return
    try:
        detached = program.map(data_to_detach)
    except (OracleError, SyntaxError) as e:
        c.v.problems.append(f"cannot rewrite the program: {e}")
        return
    r = c.run(detached)
    c.v.log.append(f"{what} with .data -> .detach(): {r.describe()}")
    if r.exc is not None:
        c.v.problems.append(f"{what} must also run clean with `.data` -> `.detach()` (else a `.data` write "
                            f"silently corrupts a saved tensor: an unannotated GG301), but it {r.describe()}")


def fixture_files() -> list[Path]:
    """Every fixture: files ``fixtures/<CODE>/*.py`` and folders ``fixtures/<CODE>/<name>/``."""
    return sorted(p for p in FIXTURES_DIR.glob("*/*")
                  if (p.is_file() and p.suffix == ".py") or (p.is_dir() and not p.name.startswith((".", "_"))))


def main(argv: list[str] | None = None) -> int:
    """``python tests/oracle.py [FIXTURES...]``: verify fixtures (files or folders), print each verdict."""
    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or fixture_files()
    bad = 0
    for p in paths:
        v = verify_file(p)
        print(("OK   " if v.ok else "FAIL ") + v.report())
        bad += not v.ok
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
