"""The project around a file: where its imports resolve, and what those modules define.

When gradguard lints ``train.py`` and it says ``from models import Net``, the engine asks
the project for ``models``. Import names resolve against source roots derived from the
file's own place on disk (and, where none has the module, against the library models:
``import lightning`` gives the model of Lightning, ``gradguard.libraries``):

- the file's directory (``python train.py`` puts it first on ``sys.path``);
- the directory above the outermost package holding the file (``__init__.py`` files);
- the directory of the nearest ``pyproject.toml`` above the file, and its ``src/``;

and relative imports (``from .layers import Scale``) against the file's package. A module
that resolves is analysed once per file content (no rules run on it; its findings are
its own file's business) and its module-level bindings are what the import gives: its
classes, functions and module-level objects, with everything the engine knows of them.
A module that does not resolve, or is being analysed already (an import cycle), gives
unknowns.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Optional

from gradguard.analysis import memory
from gradguard.analysis.callers import Callers
from gradguard.domain.modulescope import ModuleScope
from gradguard.engine import Interpreter
from gradguard.knowledge import TorchAPI, load
from gradguard.libraries import model_file, model_name
from gradguard.syntax.parse import parse_module
from gradguard.syntax.reads import note_read, recording_reads
from gradguard.syntax.relevance import module_names_that_matter
from gradguard.syntax.text import decode, read_file

MAX_IMPORT_DEPTH = 2  # modules analysed for one import chain: what the file imports, and theirs
MAX_SCOPES = 256  # analysed modules kept (each holds its tree), the least recently used go
# Where installed packages live: not a project's source root (their own relative imports
# still resolve).
INSTALLED = frozenset({"site-packages", "dist-packages"})


class Project:
    """Resolves and analyses the project modules a file imports (cached per content),
    reading the torch tables ``knowledge`` (by default the loader's), and holds the
    project's index of callers (``callers``: by default one of its own)."""

    def __init__(self, callers: Optional[Callers] = None,
                 knowledge: Optional[TorchAPI] = None) -> None:
        self.knowledge = knowledge if knowledge is not None else load()
        self.callers = callers if callers is not None else Callers(self.knowledge)
        self._scopes: OrderedDict[tuple, Optional[ModuleScope]] = OrderedDict()
        self._analysing: list[str] = []
        self._evicted: list[ModuleScope] = []  # out of the cache, maybe still in use
        self._roots: dict[Path, list[Path]] = {}
        self._names: dict[tuple, dict[str, bool]] = {}
        self._resolved: dict[tuple, Optional[Path]] = {}
        # Folders of a team's own library models, looked in before the shipped ones
        # (``gradguard.libraries``: an import the project does not resolve is a model's)
        self.model_roots: tuple[Path, ...] = ()
        self._models: dict[str, Optional[str]] = {}  # path -> the library it models

    def use_models(self, folders) -> None:
        """Look for library models in ``folders`` (a team's own, by its configuration)
        before the shipped ones; what was resolved with others is resolved again."""
        roots = tuple(Path(folder) for folder in folders)
        if roots != self.model_roots:
            self.model_roots = roots
            self._resolved.clear()
            self._models.clear()

    def model_of(self, path: Path) -> Optional[str]:
        """The library whose model the file at ``path`` is, or None (asked of every
        import: remembered per path)."""
        key = str(path)
        if key not in self._models:
            self._models[key] = model_name(key, self.model_roots)
        return self._models[key]

    # ----------------------------------------------------------------- resolving
    def roots_of(self, importer: str) -> list[Path]:
        """Where absolute imports of ``importer`` resolve, in order. Paths keep the
        importer's spelling (``abspath``, not ``resolve``): a module reached through a
        linked folder is named as the files linted there are, so one file is one place."""
        here = Path(os.path.abspath(importer)).parent
        if here not in self._roots:
            self._roots[here] = self._find_roots(here)
        return self._roots[here]

    def _find_roots(self, here: Path) -> list[Path]:
        roots = [here]
        package = here
        while (package / "__init__.py").is_file():
            package = package.parent
        roots.append(package)
        for directory in (here, *here.parents):
            if (directory / "pyproject.toml").is_file():
                roots += [directory, directory / "src"]
                break
        unique: list[Path] = []
        for root in roots:
            if root not in unique and root.is_dir() and root.name not in INSTALLED:
                unique.append(root)
        return unique

    def resolve(self, importer: Optional[str], module: str, level: int = 0) -> Optional[Path]:
        """The file ``import module`` (``level`` dots for a relative import) names."""
        if importer is None:
            return None
        key = (os.path.abspath(importer), module, level)  # a run's files do not move
        if key not in self._resolved:
            self._resolved[key] = self._resolve(importer, module, level)
        return self._resolved[key]

    def _resolve(self, importer: str, module: str, level: int) -> Optional[Path]:
        parts = [part for part in module.split(".") if part]
        if level:
            base = Path(os.path.abspath(importer)).parent
            for _ in range(level - 1):
                base = base.parent
            return _module_file(base, parts) if parts else _package_file(base)
        for root in self.roots_of(importer):
            found = _module_file(root, parts)
            if found is not None:
                return found
        return model_file(module, self.model_roots)  # an installed library's model

    def may_matter(self, path: Path, name: str) -> bool:
        """Whether importing ``name`` from the module at ``path`` can tell the engine
        anything: a first look with Python's own parser, far cheaper than analysing it
        (a function that writes nothing, builds nothing and steps nothing does not). A
        library model's every name may: a model holds only what matters."""
        if self.model_of(path) is not None:
            return True
        note_read(path)
        try:
            stat = path.stat()
            key = (str(path), stat.st_mtime_ns, stat.st_size)
            if key not in self._names:
                self._names[key] = module_names_that_matter(
                    decode(read_file(path)))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
            return False
        return self._names[key].get(name, True)  # a submodule, or a name from a star

    # ----------------------------------------------------------------- sharing with the linter
    def parsed(self, path: str, text: str) -> Optional[ModuleScope]:
        """The scope an import already made of the file at ``path``, when it was parsed
        from ``text``: linting that file reuses its tree instead of parsing it again."""
        key = _key_of(Path(path))
        scope = self._scopes.get(key) if key is not None else None
        return scope if scope is not None and scope.text == text else None

    def remember(self, scope: ModuleScope) -> None:
        """A linted file's scope, for the files that import it later in the run (only
        when what was linted is what is on disk)."""
        key = _key_of(Path(scope.path)) if scope.path is not None else None
        if key is None or key in self._scopes:
            return
        try:
            if decode(read_file(scope.path)) != scope.text:
                return
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, LookupError):
            return
        self._store(key, scope)

    # ----------------------------------------------------------------- analysing
    def scope_of(self, path: Path) -> Optional[ModuleScope]:
        """The analysed module at ``path``; None if it cannot be read or parsed, if it
        is already being analysed (an import cycle) or too deep in an import chain, or if
        its tree alone would take a quarter of a process's memory (``memory.is_large``)."""
        key = _key_of(path)
        if key is None:
            return None
        note_read(path)
        if key in self._scopes:
            self._scopes.move_to_end(key)
            scope = self._scopes[key]
            for read in scope.reads if scope is not None else ():
                note_read(read)
            return scope
        if str(path) in self._analysing or len(self._analysing) >= MAX_IMPORT_DEPTH:
            return None
        if memory.is_large(key[2]):  # torch's generated tables: a quarter GB of tree each,
            return None  # kept for the rest of the run; what they bind stays unknown
        self._analysing.append(str(path))
        try:
            with recording_reads() as reads:
                scope = self._analyse(path)
            if scope is not None:
                scope.reads = frozenset(reads)
        finally:
            self._analysing.pop()
        self._store(key, scope)
        return scope

    def _store(self, key: tuple, scope: Optional[ModuleScope]) -> None:
        self._scopes[key] = scope
        while len(self._scopes) > MAX_SCOPES:
            _, evicted = self._scopes.popitem(last=False)
            if evicted is not None:
                self._evicted.append(evicted)

    def forget(self) -> None:
        """Let every kept module go (to make room for a large file): they are analysed
        again if a later file imports them."""
        self._evicted += [scope for scope in self._scopes.values() if scope is not None]
        self._scopes.clear()
        self.release()

    def release(self) -> None:
        """Between files: empty the scopes the cache let go (their functions name them,
        a cycle that reference counting alone would never free)."""
        for scope in self._evicted:
            scope.env, scope.heap, scope.imports = {}, {}, []
        self._evicted.clear()

    def _analyse(self, path: Path) -> Optional[ModuleScope]:
        try:
            text = decode(read_file(path))
            module = parse_module(text)
        except Exception:  # unreadable, undecodable, or not Python: its imports give unknowns
            return None
        scope = ModuleScope(str(path), module, text=text,
                            model=self.model_of(path))
        interpreter = Interpreter(module, (), lambda *_: None, [], scope.positions,
                                  project=self, scope=scope, bodies=False,
                                  knowledge=self.knowledge)
        interpreter.run()
        scope.imports = interpreter.file.imported
        return scope



def _key_of(path: Path) -> Optional[tuple]:
    """A file's identity for the caches: its path, modification time and size."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return (str(path), stat.st_mtime_ns, stat.st_size)


def _module_file(root: Path, parts: list[str]) -> Optional[Path]:
    if not parts:
        return None
    base = root.joinpath(*parts)
    candidate = base.with_suffix(".py") if base.name else base
    if candidate.is_file():
        return candidate
    return _package_file(base)


def _package_file(directory: Path) -> Optional[Path]:
    init = directory / "__init__.py"
    return init if init.is_file() else None


def on_disk(path: str) -> Optional[str]:
    """``path`` when it names a file on disk (imports can be followed from it)."""
    return path if path and os.path.isfile(path) else None
