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
  ``from . import models``, ``from .models import convert``, and one re-export
  (``from pkg import convert`` where ``pkg/__init__.py`` says ``from .models import
  convert``). A star import is not followed (no caller known: grad stays on, as before).

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
from typing import TYPE_CHECKING, Iterator, Optional

from gradguard.domain.facts import Tri
from gradguard.engine.common import NEUTRAL_DECORATORS
from gradguard.knowledge import TorchAPI, load
from gradguard.syntax.reads import note_read
from gradguard.syntax.text import read_file

if TYPE_CHECKING:
    from gradguard.analysis.project import Project

MAX_FILES = 2000  # Python files in a tree that is indexed; a bigger tree gives no callers
MAX_DIRS = 2000  # directories walked; more, and the tree gives no callers
# What a file that calls with grad off must say (the names of torch's grad-off contexts).
GRAD_OFF_WORDS = (b"no_grad", b"inference_mode", b"set_grad_enabled")
SKIPPED_DIRS = frozenset({"__pycache__", "site-packages", "dist-packages", "node_modules"})

# An import statement: ``import a.b as c, d`` or ``from .a import (b, c as d)``; its words.
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]+(\([^)]*\)|[^\r\n]*)",
                     re.MULTILINE)
_WORD = re.compile(rb"[A-Za-z_]\w*")
_ATTRIBUTE = re.compile(rb"\.([A-Za-z_]\w*)")  # ``models.convert``: ".convert"


@dataclass
class _Tree:
    """A project tree: its Python files and, per word of their import lines (``convert``)
    and per attribute name they use (``.convert``), the files."""

    files: list[str] = field(default_factory=list)
    words: dict[str, list[int]] = field(default_factory=dict)
    # the files whose text names a way to turn grad off (only they can call with grad off)
    grad_off: set[int] = field(default_factory=set)
    # per file, its imports as read off its import lines (``_Table.imports``' form): a file
    # none of whose imports resolves to the function's file is not parsed
    imports: dict[int, dict] = field(default_factory=dict)


@dataclass
class _Table:
    """What one parsed file imports and calls."""

    # word -> the imports that name it, each (the name the code uses, module, level, the
    # name imported or None for ``import m``); the word is the name imported, or the last
    # part of the module imported (``import pkg.models``, ``from pkg.models import f``)
    imports: dict[str, list[tuple[str, str, int, Optional[str]]]]
    calls: dict[str, set]  # dotted callee (``convert``, ``models.convert``) -> grad modes


class Callers:
    """The project-wide index (one per ``Project``: ``Project.callers``), recognising
    torch's grad-mode names by the tables ``knowledge`` (default: the loader's)."""

    def __init__(self, knowledge: Optional[TorchAPI] = None) -> None:
        self.grad_modes = (knowledge if knowledge is not None else load()).grad_mode_contexts
        self._trees: dict[Path, Optional[_Tree]] = {}
        self._tables: dict[tuple, Optional[_Table]] = {}
        self._answers: dict[tuple, frozenset] = {}
        self.files_read = 0  # for measurements: files read for the index
        self.files_parsed = 0  # ... and parsed as candidate callers

    def grads(self, project: "Project", path: str, name: str) -> frozenset:
        """The grad modes (``Tri``) of the calls of the module-level function ``name`` of
        the file at ``path`` made in the project's other files; empty when none is known."""
        return self._ask(project, path, name, off_only=False)

    def called_without_grad(self, project: "Project", path: str, name: str) -> bool:
        """Whether some call of ``name`` in another file is made with grad off: ``Tri.NO
        in grads(...)``, cheaper (only the files that mention a way to turn grad off are
        parsed)."""
        return Tri.NO in self._ask(project, path, name, off_only=True)

    def _ask(self, project: "Project", path: str, name: str, off_only: bool) -> frozenset:
        target = Path(path).resolve()
        roots = project.roots_of(str(target))
        if not roots:
            return frozenset()
        root = min(roots, key=lambda root: len(root.parts))  # the others lie under it
        key = (root, target, name, off_only)
        if key not in self._answers:
            self._answers[key] = self._grads(project, root, target, name, off_only)
        return self._answers[key]

    def _grads(self, project: "Project", root: Path, target: Path, name: str,
               off_only: bool) -> frozenset:
        tree = self._tree(root)
        if tree is None:
            return frozenset()
        stem = target.parent.name if target.name == "__init__.py" else target.stem
        attribute = set(tree.words.get("." + name, ()))  # models.convert(...)
        candidates = set(tree.words.get(name, ())) | (set(tree.words.get(stem, ())) & attribute)
        if off_only:
            candidates &= tree.grad_off
        sources = {target} | _reexporters(project, tree, target, name)
        found: set = set()
        for index in sorted(candidates):
            file = tree.files[index]
            if Path(file) == target or not _callees(project, file, tree.imports.get(index, {}),
                                                     sources, name, stem):
                continue
            table = self._table(file, off_only)
            if table is None:
                continue
            for callee in _callees(project, file, table.imports, sources, name, stem):
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
                source = read_file(file)
            except OSError:
                continue
            self.files_read += 1
            seen = set()
            imports: defaultdict[str, list] = defaultdict(list)
            for module, names in _IMPORT.findall(source):
                seen.update(_WORD.findall(module))
                seen.update(_WORD.findall(names))
                _import_line(imports, module, names)
            if imports:
                tree.imports[index] = dict(imports)
            seen.update(b"." + word for word in _ATTRIBUTE.findall(source))
            if any(word in source for word in GRAD_OFF_WORDS):
                tree.grad_off.add(index)
            for word in seen:
                words[word.decode("ascii")].append(index)
        tree.words = dict(words)
        return tree

    def _table(self, file: str, off_only: bool) -> Optional[_Table]:
        note_read(file)
        try:
            stat = os.stat(file)
        except OSError:
            return None
        key = (file, stat.st_mtime_ns, stat.st_size)
        # a table of every call answers the grad-off question too
        table = self._tables.get((*key, False), self._tables.get((*key, True), False)) \
            if off_only else self._tables.get((*key, False), False)
        if table is False:
            table = self._tables[(*key, off_only)] = self._parse(file, off_only)
        return table

    def _parse(self, file: str, off_only: bool) -> Optional[_Table]:
        try:
            source = read_file(file)
            self.files_parsed += 1
            module = ast.parse(source, filename=file)
            return _tabulate(module, b"set_grad_enabled" in source, off_only, self.grad_modes)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            return None


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


def _import_line(imports: defaultdict, module: bytes, names: bytes) -> None:
    """The entries (``_Table.imports``' form) of one import line read as text."""
    try:
        module_text, names_text = module.decode("ascii"), names.decode("ascii")
    except UnicodeDecodeError:
        return
    names_text = " ".join(line.partition("#")[0] for line in names_text.splitlines())
    names_text = names_text.partition(";")[0].strip().strip("()")
    for item in names_text.split(","):
        words = item.split()
        if not words or words[0] == "*":
            continue
        imported = words[0]
        local = words[2] if len(words) == 3 and words[1] == "as" else imported
        if module:
            dotted = module_text.lstrip(".")
            entry = (local, dotted, len(module_text) - len(dotted), imported)
            imports[imported].append(entry)
            last = dotted.rpartition(".")[2]
            if last and last != imported:
                imports[last].append(entry)
        else:
            imports[imported.rpartition(".")[2]].append((local, imported, 0, None))


def _callees(project: "Project", file: str, imports: dict, sources: set,
             name: str, stem: str) -> list[str]:
    """How ``file``'s code names the function ``name`` (of the file ``sources``' first
    member, whose module's last part is ``stem``; the others re-export it): ``convert``,
    ``c``, ``models.convert``; only through imports that resolve to one of ``sources``."""
    found = []
    entries = imports.get(name, []) + (imports.get(stem, []) if stem != name else [])
    for local, module, level, imported in entries:
        if imported is None:  # import a.b [as m]: a.b.convert(...) / m.convert(...)
            if project.resolve(file, module, 0) in sources:
                found.append(f"{local}.{name}")
            continue
        if imported == name and project.resolve(file, module, level) in sources:
            found.append(local)  # from models import convert [as c]
        submodule = f"{module}.{imported}" if module else imported
        if project.resolve(file, submodule, level) in sources:
            found.append(f"{local}.{name}")  # from pkg import models: models.convert(...)
    return found


def _reexporters(project: "Project", tree: _Tree, target: Path, name: str) -> set:
    """The files that import ``name`` from ``target`` under the same name (a package's
    ``__init__.py`` saying ``from .models import convert``): importing it from them is
    importing it from ``target``. One hop."""
    found = set()
    for index in tree.words.get(name, ()):
        file = tree.files[index]
        for local, module, level, imported in tree.imports.get(index, {}).get(name, ()):
            if local == imported == name and project.resolve(file, module, level) == target:
                found.add(Path(file))
    return found


# --------------------------------------------------------------------- one file's calls
def _statements(statements: list) -> Iterator[ast.stmt]:
    """Every statement, nested ones too (not those of a lambda or a comprehension)."""
    for statement in statements:
        yield statement
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from _statements(case.body)


def _tabulate(module: ast.Module, toggles: bool, off_only: bool, grad_modes: dict) -> _Table:
    """``toggles``: the text names ``set_grad_enabled`` (a bare call of it may change grad
    mode for the statements after it). ``off_only``: table only the calls made with grad
    off (the expressions elsewhere are not walked). ``grad_modes``: torch's grad-mode
    names and what they do (``TorchAPI.grad_mode_contexts``)."""
    imports: defaultdict[str, list[tuple[str, str, int, Optional[str]]]] = defaultdict(list)
    aliases: dict[str, str] = {}  # a name the code uses -> the torch name it stands for
    for node in _statements(module.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name  # import a.b: the code writes a.b.f
                imports[alias.name.rpartition(".")[2]].append((local, alias.name, 0, None))
                if alias.name == "torch" or alias.name.startswith("torch."):
                    aliases[alias.asname or alias.name.partition(".")[0]] = \
                        alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    continue
                entry = (alias.asname or alias.name, node.module or "", node.level, alias.name)
                imports[alias.name].append(entry)
                last = (node.module or "").rpartition(".")[2]
                if last and last != alias.name:
                    imports[last].append(entry)
                if node.level == 0 and node.module is not None \
                        and (node.module == "torch" or node.module.startswith("torch.")):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    walker = _Walker(aliases, toggles, off_only, grad_modes)
    walker.block(module.body, Tri.YES)
    return _Table(dict(imports), dict(walker.calls))


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


class _Walker:
    """Walks a module, tabling each call (and bare reference) with its grad mode."""

    def __init__(self, aliases: dict[str, str], toggles: bool, off_only: bool,
                 grad_modes: dict) -> None:
        self.aliases = aliases
        self.grad_modes = grad_modes
        self.toggles = toggles
        self.off_only = off_only
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
        return self.grad_modes.get(qualname)

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
            if not self.toggles \
                    or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                    and self._effect(statement.value.func) == "arg":
                grad = self._mode(statement.value, grad, bare=False) or Tri.MAYBE
            elif any(isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call)
                     and self._effect(inner.value.func) == "arg"
                     for inner in ast.walk(statement)):
                grad = Tri.MAYBE  # set_grad_enabled(...) in a nested block: it leaks out

    def visit(self, node: ast.AST, grad: Tri) -> None:
        if self.off_only and grad is not Tri.NO and isinstance(node, ast.expr):
            return  # no call in it is made with grad off
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
