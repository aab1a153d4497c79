"""Callers in other files of the project: the grad mode a module-level function is called in.

gradguard analyses a function body on its own with grad mode on at entry. Within one file
a followed call made under ``torch.no_grad()`` makes that entry *maybe*
(``UserCalls.entry_grad``). This module answers the same question across files, cheaply:
for ``def convert(...)`` in ``models.py``, in which grad modes do the project's other files
call it? ``train.py`` saying ``from models import convert`` and calling ``convert(old)``
inside ``with torch.no_grad():`` is a call with grad off (``Tri.NO``).

How, and what it costs:

- The project is the tree under the outermost source root of the function's file
  (``Project.roots_of``: the ``pyproject.toml`` directory, else the directory above the
  outermost package, else the file's directory). Hidden directories, ``__pycache__``,
  virtual environments and installed packages (``site-packages``) are not walked.
- A tree with more than ``MAX_FILES`` Python files (or more than ``MAX_DIRS``
  directories) is not indexed at all: no callers are known, and a function keeps grad on
  at entry, as before. This bounds the work on a huge tree (or a home directory).
- The tree is listed once per process and each file read once for the index: the words
  of its ``import`` lines (a regular expression over the bytes, no parse). A file is a
  candidate caller of ``models.convert`` only when its import lines name ``convert`` or
  ``models``; a candidate is parsed with ``ast`` (never libcst) once per content (path,
  modification time, size), and its calls are tabled with the grad mode they stand in.
- A call counts only when the file imports the function from that very file, as
  ``Project.resolve`` resolves the import: ``from models import convert``,
  ``from pkg.models import convert as c``, ``import models`` + ``models.convert(...)``,
  ``from . import models``, ``from .models import convert``. A re-export through a
  package's ``__init__.py`` or a star import is not followed (no caller known: grad stays
  on, as before).

Grad mode at a call: ``Tri.NO`` inside ``with torch.no_grad()``/``torch.inference_mode()``/
``torch.set_grad_enabled(False)``, or in a function decorated ``@torch.no_grad()``/
``@torch.inference_mode()``; ``Tri.YES`` at module level or in a function with no such
decorator (``enable_grad`` and ``set_grad_enabled(True)`` too); ``Tri.MAYBE`` when unclear
(``set_grad_enabled(flag)``, an unknown decorator, inside a lambda, after a bare
``torch.set_grad_enabled(...)`` call, or the function merely referenced, not called:
``model.apply(convert)``). Torch is recognised through ``import torch``,
``import torch as t``, ``from torch import no_grad [as ng]`` and ``torch.autograd``'s names.
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from gradguard.expressions import NEUTRAL_DECORATORS
from gradguard.facts import Tri
from gradguard.knowledge import TORCH

if TYPE_CHECKING:
    import libcst as cst

    from gradguard.project import Project

MAX_FILES = 4000  # Python files in a tree that is indexed; a bigger tree gives no callers
MAX_DIRS = 4000  # directories walked; more, and the tree gives no callers
SKIPPED_DIRS = frozenset({"__pycache__", "site-packages", "dist-packages", "node_modules"})

# An import statement: ``import a.b as c, d`` or ``from .a import (b, c as d)``; its words.
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]+(\([^)]*\)|[^\r\n]*)",
                     re.MULTILINE)
_WORD = re.compile(rb"[A-Za-z_]\w*")


@dataclass
class _Tree:
    """A project tree: its Python files and, per word of their import lines, the files."""

    files: list[str] = field(default_factory=list)
    words: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class _Table:
    """What one parsed file imports and calls."""

    # (the name its code uses, module, level, the name imported or None for ``import m``)
    imports: list[tuple[str, str, int, Optional[str]]]
    calls: dict[str, set]  # dotted callee (``convert``, ``models.convert``) -> grad modes


class Callers:
    """The project-wide index (one per process: ``CALLERS``)."""

    def __init__(self) -> None:
        self._trees: dict[Path, Optional[_Tree]] = {}
        self._tables: dict[tuple, Optional[_Table]] = {}
        self._answers: dict[tuple, frozenset] = {}
        self.files_read = 0  # for measurements: files read for the index
        self.files_parsed = 0  # ... and parsed as candidate callers

    def grads(self, project: "Project", path: str, name: str) -> frozenset:
        """The grad modes (``Tri``) of the calls of the module-level function ``name`` of
        the file at ``path`` made in the project's other files; empty when none is known."""
        target = Path(path).resolve()
        roots = project.roots_of(str(target))
        if not roots:
            return frozenset()
        root = min(roots, key=lambda root: len(root.parts))  # the others lie under it
        key = (root, target, name)
        if key not in self._answers:
            self._answers[key] = self._grads(project, root, target, name)
        return self._answers[key]

    def _grads(self, project: "Project", root: Path, target: Path, name: str) -> frozenset:
        tree = self._tree(root)
        if tree is None:
            return frozenset()
        stem = target.parent.name if target.name == "__init__.py" else target.stem
        candidates = sorted(set(tree.words.get(name, ())) | set(tree.words.get(stem, ())))
        found: set = set()
        for index in candidates:
            file = tree.files[index]
            if Path(file) == target:
                continue
            table = self._table(file, name)
            if table is None:
                continue
            for callee in _callees(project, file, table, target, name):
                found |= table.calls.get(callee, set())
        return frozenset(found)

    # ----------------------------------------------------------------- the index
    def _tree(self, root: Path) -> Optional[_Tree]:
        if root not in self._trees:
            self._trees[root] = self._index(root)
        return self._trees[root]

    def _index(self, root: Path) -> Optional[_Tree]:
        files = _python_files(root)
        if files is None:
            return None
        tree = _Tree(files)
        words: defaultdict[str, list[int]] = defaultdict(list)
        for index, file in enumerate(files):
            try:
                with open(file, "rb") as handle:
                    source = handle.read()
            except OSError:
                continue
            self.files_read += 1
            seen = set()
            for module, names in _IMPORT.findall(source):
                seen.update(_WORD.findall(module))
                seen.update(_WORD.findall(names))
            for word in seen:
                words[word.decode("ascii")].append(index)
        tree.words = dict(words)
        return tree

    def _table(self, file: str, name: str) -> Optional[_Table]:
        try:
            stat = os.stat(file)
        except OSError:
            return None
        key = (file, stat.st_mtime_ns, stat.st_size)
        if key not in self._tables:
            self._tables[key] = self._parse(file)
        return self._tables[key]

    def _parse(self, file: str) -> Optional[_Table]:
        try:
            with open(file, "rb") as handle:
                source = handle.read()
            self.files_parsed += 1
            module = ast.parse(source, filename=file)
            return _tabulate(module)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None


CALLERS = Callers()


def grads_from_other_files(interpreter, definition: "cst.FunctionDef") -> frozenset:
    """The grad modes of the calls of ``definition`` made in the project's other files,
    when it is a module-level function of a file on disk (else none)."""
    project, path = interpreter.project, interpreter.scope.path
    if project is None or path is None \
            or not any(statement is definition for statement in interpreter.module.body):
        return frozenset()
    return CALLERS.grads(project, path, definition.name.value)


# --------------------------------------------------------------------- the tree's files
def _python_files(root: Path) -> Optional[list[str]]:
    """The Python files under ``root``, sorted; None past ``MAX_FILES``/``MAX_DIRS``."""
    files: list[str] = []
    directories = 0
    for directory, subdirs, names in os.walk(root):
        directories += 1
        if directories > MAX_DIRS:
            return None
        if "pyvenv.cfg" in names and directory != str(root):  # a virtual environment
            subdirs[:] = []
            continue
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and d not in SKIPPED_DIRS]
        for name in names:
            if name.endswith(".py"):
                files.append(os.path.join(directory, name))
                if len(files) > MAX_FILES:
                    return None
    return sorted(files)


def _callees(project: "Project", file: str, table: _Table, target: Path,
             name: str) -> list[str]:
    """How ``file``'s code names the function ``name`` of ``target``: ``convert``,
    ``c``, ``models.convert``; only through imports that resolve to ``target``."""
    found = []
    for local, module, level, imported in table.imports:
        if imported is None:  # import a.b [as m]: a.b.convert(...) / m.convert(...)
            if project.resolve(file, module, 0) == target:
                found.append(f"{local}.{name}")
            continue
        if imported == name and project.resolve(file, module, level) == target:
            found.append(local)  # from models import convert [as c]
        submodule = f"{module}.{imported}" if module else imported
        if project.resolve(file, submodule, level) == target:
            found.append(f"{local}.{name}")  # from pkg import models: models.convert(...)
    return found


# --------------------------------------------------------------------- one file's calls
def _tabulate(module: ast.Module) -> _Table:
    imports: list[tuple[str, str, int, Optional[str]]] = []
    aliases: dict[str, str] = {}  # a name the code uses -> the torch name it stands for
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name  # import a.b: the code writes a.b.f
                imports.append((local, alias.name, 0, None))
                if alias.name == "torch" or alias.name.startswith("torch."):
                    aliases[alias.asname or alias.name.partition(".")[0]] = \
                        alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    continue
                imports.append((alias.asname or alias.name, node.module or "", node.level,
                                alias.name))
                if node.level == 0 and node.module is not None \
                        and (node.module == "torch" or node.module.startswith("torch.")):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    walker = _Walker(aliases)
    walker.block(module.body, Tri.YES)
    return _Table(imports, dict(walker.calls))


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


class _Walker:
    """Walks a module, tabling each call (and bare reference) with its grad mode."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.calls: defaultdict[str, set] = defaultdict(set)

    # what torch's grad-mode names do
    def _effect(self, node: ast.AST) -> Optional[str]:
        """"off", "on" or "arg" when ``node`` names one of torch's grad-mode contexts."""
        text = _dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        if head not in self.aliases:
            return None
        qualname = self.aliases[head] + ("." + rest if rest else "")
        return TORCH.grad_mode_contexts.get(qualname)

    def _mode(self, node: ast.AST, outer: Tri, bare: bool) -> Optional[Tri]:
        """The grad mode ``node`` (a with item, or a decorator when ``bare`` is allowed)
        sets; None when it is not one of torch's grad-mode contexts."""
        if isinstance(node, ast.Call):
            effect = self._effect(node.func)
            if effect is None:
                return None
            args = list(node.args) + [k.value for k in node.keywords if k.arg == "mode"]
            flag = args[0] if args else None
            if effect == "on":
                return Tri.YES
            if effect == "arg":
                if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
                    return Tri.of(flag.value)
                return Tri.MAYBE
            # off: no_grad(), inference_mode() / inference_mode(True); inference_mode(False)
            # leaves grad mode as it was
            if flag is None or (isinstance(flag, ast.Constant) and flag.value is True):
                return Tri.NO
            if isinstance(flag, ast.Constant) and flag.value is False:
                return outer
            return outer & Tri.MAYBE  # inference_mode(flag): off, or as it was
        if bare and self._effect(node) == "off":
            return Tri.NO  # @torch.no_grad without parentheses
        return None

    def _entry(self, node: ast.AST) -> Tri:
        """Grad mode at the start of a function's body, from its decorators."""
        mode: Optional[Tri] = None
        for decorator in node.decorator_list:
            known = self._mode(decorator, Tri.YES, bare=True)
            if known is not None:
                mode = known
                continue
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            text = _dotted(target) or ""
            if text.rpartition(".")[2] not in NEUTRAL_DECORATORS:
                mode = Tri.MAYBE  # an unknown decorator may run the body under no_grad
        return Tri.YES if mode is None else mode

    # the walk
    def block(self, statements: list, grad: Tri) -> None:
        for statement in statements:
            self.visit(statement, grad)
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                    and self._effect(statement.value.func) == "arg":
                grad = self._mode(statement.value, grad, bare=False) or Tri.MAYBE
            elif any(isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call)
                     and self._effect(inner.value.func) == "arg"
                     for inner in ast.walk(statement)):
                grad = Tri.MAYBE  # set_grad_enabled(...) in a nested block: it leaks out

    def visit(self, node: ast.AST, grad: Tri) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in [*node.decorator_list, *node.args.defaults,
                          *(d for d in node.args.kw_defaults if d is not None)]:
                self.visit(inner, grad)
            self.block(node.body, self._entry(node))
            return
        if isinstance(node, ast.Lambda):
            for inner in [*node.args.defaults,
                          *(d for d in node.args.kw_defaults if d is not None)]:
                self.visit(inner, grad)
            self.visit(node.body, Tri.MAYBE)  # it runs wherever it is called
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inner_grad = grad
            for item in node.items:
                self.visit(item.context_expr, inner_grad)
                mode = self._mode(item.context_expr, inner_grad, bare=False)
                if mode is not None:
                    inner_grad = mode
                if item.optional_vars is not None:
                    self.visit(item.optional_vars, inner_grad)
            self.block(node.body, inner_grad)
            return
        if isinstance(node, ast.Call):
            callee = _dotted(node.func)
            if callee is not None:
                self.calls[callee].add(grad)
            else:
                self.visit(node.func, grad)
            for inner in [*node.args, *(keyword.value for keyword in node.keywords)]:
                self.visit(inner, grad)
            return
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            referenced = _dotted(node)
            if referenced is not None:
                self.calls[referenced].add(Tri.MAYBE)  # called who knows where
                return
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self.block(value, grad)
                else:
                    for inner in value:
                        if isinstance(inner, ast.AST):
                            self.visit(inner, grad)
            elif isinstance(value, ast.AST):
                self.visit(value, grad)
