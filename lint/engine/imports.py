"""``import`` statements, and the project modules they name, analysed when the code first uses
a name from them."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    Imported,
    ModuleRef,
    Ref,
    Value,
)
from gradguard.engine.common import source_text
from gradguard.engine.room import Room


class Imports(Room):
    """``import`` statements, and the project modules they name, analysed when the code first
    uses a name from them."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self.resolved: dict[Imported, tuple] = {}  # import -> (its value, its module)

    def import_(self, node: cst.Import, st: State) -> State:
        for alias in node.names:
            name = source_text(alias.name)
            if alias.asname is not None:
                st.bind(alias.asname.name.value, self._module_value(st, name, 0))
            else:
                top = name.split(".")[0]
                st.bind(top, self._module_value(st, top, 0))
        return st

    def import_from(self, node: cst.ImportFrom, st: State) -> State:
        module = source_text(node.module) if node.module is not None else ""
        level = len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            return st
        source = Ref(module) if not level and _is_known_module(module) \
            else self._module_value(st, module, level)
        for alias in node.names:
            name = alias.name.value
            bound = alias.asname.name.value if alias.asname is not None else name
            st.bind(bound, Imported(source.path, name) if isinstance(source, Imported)
                    else self.expressions.attribute_of(st, source, name, node, None))
        return st

    def _module_value(self, st: State, name: str, level: int) -> Value:
        """What an import of ``name`` gives: torch's API, or a module of the project (which
        is analysed only when a name from it is used: ``resolve_import``)."""
        if not level and _is_known_module(name):
            return Ref(name)
        project = self.file.project
        if project is None:
            return UNKNOWN
        path = project.resolve(self.file.scope.path, name, level)
        return Imported(str(path)) if path is not None else UNKNOWN

    def resolve_import(self, st: State, value: Imported, hops: int = 0) -> Value:
        """The value an import binds, the first time the code uses it (``hops``: packages
        re-exporting it passed through)."""
        if value in self.resolved:
            resolved, scope = self.resolved[value]
            if scope is not None:
                st.heap.add_layer(scope.heap)
            return resolved
        resolved = self._resolve_import(st, value, hops)
        project = self.file.project
        self.resolved[value] = (resolved, project.scope_of(Path(value.path))
                                if project is not None else None)
        return resolved

    def _resolve_import(self, st: State, value: Imported, hops: int) -> Value:
        project, imported = self.file.project, self.file.imported
        if project is None or hops >= MAX_REEXPORTS or (
                value.name is not None and not project.may_matter(Path(value.path), value.name)):
            return UNKNOWN
        scope = project.scope_of(Path(value.path))
        if scope is None:
            return UNKNOWN
        if scope not in imported:
            imported.append(scope)
            imported.extend(inner for inner in scope.imports if inner not in imported)
        st.heap.add_layer(scope.heap)
        if value.name is None:
            return ModuleRef(scope)
        found = scope.env.get(value.name)
        if isinstance(found, Imported):  # a package's __init__ re-exporting a name
            return self.resolve_import(st, found, hops + 1)
        if found is not None:
            return found
        submodule = project.resolve(value.path, value.name, 1)  # from pkg import sub
        return self.resolve_import(st, Imported(str(submodule)), hops + 1) \
            if submodule is not None else UNKNOWN


MAX_REEXPORTS = 8  # packages an imported name is followed through (__init__ re-exports)


def _is_known_module(module: str) -> bool:
    """torch, and the standard modules whose functions the engine follows
    (``itertools.chain`` over parameters, ``collections.OrderedDict`` of layers, ``math``'s
    functions, which give numbers, ``copy.deepcopy`` of a model, ``functools.partial``,
    ``types.SimpleNamespace`` holding a pipeline's parts)."""
    return module in ("torch", "itertools", "collections", "math", "copy", "functools",
                      "types") \
        or module.startswith("torch.")

