"""The import graph of the ``gradguard`` package is a tree, in layers: no module imports, directly
or through others, one that imports it, not even from inside a function (an import
hidden there to break a cycle is still a cycle). Imports under ``if TYPE_CHECKING:``
never run and do not count. Importing ``a.b.c`` runs the packages ``a`` and ``a.b``
first: a package's ``__init__`` counts as imported by every import of its modules (but
not by the modules inside it, which Python loads after their package).

The package's rooms (its subpackages, and ``gradguard.rules``) are stacked in ``LAYERS``: a
module imports only from its own room and the rooms below it, so the front ends sit over the
runs, the runs over the analysis, the analysis over the engine, and the engine over the
rules, the knowledge and the vocabulary; reporting, configuration and edits sit below the
engine and can never reach into it.

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

# gradguard's rooms, top to bottom: each imports only from itself and the rooms after it.
# ``gradguard`` itself (the public API: ``check_source``, ``%load_ext``) stands above them.
LAYERS = (
    "frontends",      # the command line, the language server, the plugins, explain, watch
    "runs",           # a run over files: settings, processes, the cache, notebooks
    "verify",         # the runtime verifier and monitor
    "analysis",       # one file checked, and the project around it
    "engine",         # the abstract interpreter's rooms
    "reporting",      # output formats, rule documentation
    "configuration",  # files to lint, configuration files, options, rule codes
    "rules",          # gradguard.rules: one rule per module, consuming the engine's events
    "editing",        # fixes and noqa comments
    "libraries",      # what libraries between the code and torch do, as data
    "knowledge",      # the torch API as data
    "domain",         # facts, values, states, events, findings
    "syntax",         # parse, walks, positions, scopes, a file's text
)


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
    assert {"gradguard.frontends.cli", "gradguard.engine.interpreter",
            "gradguard.rules.base"} <= set(graph)
    assert "gradguard.runs.run" in graph["gradguard.frontends.cli"]
    assert "gradguard.engine" in graph["gradguard.analysis.callers"]  # via gradguard.engine.common


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


def room_of(module: str) -> str:
    """The room a module is in (``gradguard`` for the package's own ``__init__``)."""
    parts = module.split(".")
    if parts[:2] == ["gradguard", "rules"]:
        return "rules"
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "gradguard"


def test_every_module_is_in_a_room():
    """No module lies loose beside the rooms: a new one goes into the room of its concern."""
    loose = sorted(name for name in MODULES if room_of(name) == "gradguard"
                   and name != "gradguard")
    assert not loose, f"modules outside the rooms of LAYERS: {loose}"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a room above the importing module's room, as ``a -> b``."""
    rank = {room: position for position, room in enumerate(LAYERS)}
    found = []
    for module, targets in sorted(graph.items()):
        room = room_of(module)
        if room == "gradguard":
            continue
        for target in sorted(targets):
            target_room = room_of(target)
            if target_room == "gradguard" and target == "gradguard":
                continue  # the package itself (``from gradguard import __version__``)
            if rank.get(target_room, -1) < rank[room]:
                found.append(f"{module} ({room}) -> {target} ({target_room})")
    return found


def test_the_layer_check_finds_an_upward_import():
    graph = {"gradguard.engine.tensors": {"gradguard.runs.run"},
             "gradguard.runs.run": {"gradguard.engine.tensors"}}
    assert layer_violations(graph) == [
        "gradguard.engine.tensors (engine) -> gradguard.runs.run (runs)"]


def test_rooms_import_only_downwards():
    found = layer_violations(import_graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


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


@pytest.mark.parametrize("name", ["gradguard.frontends.cli", "gradguard.configuration.options",
                                  "gradguard.runs.run"])
def test_the_command_line_does_not_load_the_engine(name):
    """A run the cache answers loads neither libcst nor the engine: they load at the
    first file linted."""
    code = (f"import sys, {name}; "
            "assert not any(m == 'libcst' or m.startswith(('gradguard.engine', "
            "'gradguard.analysis.checker')) for m in sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, cwd=ROOT)
