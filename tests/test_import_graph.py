"""The import graph of the ``gradguard`` package is a tree: no module imports, directly
or through others, one that imports it, not even from inside a function (an import
hidden there to break a cycle is still a cycle). Imports under ``if TYPE_CHECKING:``
never run and do not count. Importing ``a.b.c`` runs the packages ``a`` and ``a.b``
first: a package's ``__init__`` counts as imported by every import of its modules (but
not by the modules inside it, which Python loads after their package).

And each module imports alone, in a fresh interpreter: none needs another to have been
imported first.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"gradguard": ROOT / "lint", "gradguard.rules": ROOT / "rules"}


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name, with its source file."""
    found: dict[str, Path] = {}
    for package, directory in PACKAGES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    found.pop("gradguard.__main__", None)  # running it is running the command
    return found


MODULES = _modules()


def _ancestors(name: str) -> list[str]:
    """The packages Python imports before ``name``: ``a``, ``a.b`` for ``a.b.c``."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
        or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement that can run (not those under ``if TYPE_CHECKING:``)."""
    for node in ast.iter_child_nodes(tree):
        if _is_type_checking(node):
            yield from (child for branch in node.orelse for child in _imports_in(branch))
            continue
        yield from _imports_in(node)


def _imports_in(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _targets(name: str, node: ast.AST) -> list[str]:
    """The package's modules an import statement in module ``name`` loads."""
    if isinstance(node, ast.Import):
        dotted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
            anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
        dotted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                  for alias in node.names]
    loaded = set()
    for target in dotted:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target:
            loaded.update([target, *_ancestors(target)])
    return sorted(loaded - {name, *_ancestors(name)})


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = {target for node in _imports(tree) for target in _targets(name, node)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert {"gradguard.cli", "gradguard.engine.interpreter", "gradguard.rules.base"} <= set(graph)
    assert "gradguard.run" in graph["gradguard.cli"]
    assert "gradguard.engine" in graph["gradguard.callers"]  # via gradguard.engine.common


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "\n".join(
        " <-> ".join(component) + ": " + "; ".join(
            f"{module} -> {target}" for module in component for target in sorted(graph[module])
            if target in component)
        for component in found)


def test_each_module_imports_alone():
    """In one fresh interpreter, each module is imported with no module of the package
    loaded before it (third-party modules stay loaded: they are not the question)."""
    script = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "gradguard" or m.startswith("gradguard.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as error:
        if error.name and not error.name.startswith("gradguard"):
            continue  # an optional extra that is not installed (pygls, torch)
        failed.append(name + ": " + traceback.format_exc())
    except Exception:
        failed.append(name + ": " + traceback.format_exc())
print("\\n".join(failed))
"""
    result = subprocess.run([sys.executable, "-c", script, *sorted(MODULES)],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


@pytest.mark.parametrize("name", ["gradguard.cli", "gradguard.options", "gradguard.run"])
def test_the_command_line_does_not_load_the_engine(name):
    """A run the cache answers loads neither libcst nor the engine: they load at the
    first file linted."""
    code = (f"import sys, {name}; "
            "assert not any(m == 'libcst' or m.startswith(('gradguard.engine', "
            "'gradguard.checker')) for m in sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=ROOT)
