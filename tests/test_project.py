"""Across files: imports of the project's own modules resolve to files on disk, and what
those modules define is followed (classes, functions, module-level objects).

Linting only: no torch needed. The folder fixtures (fixtures/*/bug_*_other_file/) prove
the same shapes against torch; these pin down resolution, placement and the CLI."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import gg

from gradguard import check_source
from gradguard.analysis import memory
from gradguard.analysis.project import Project
from gradguard.frontends.flake8_plugin import GradguardPlugin

MODELS = """\
import torch
import torch.nn as nn


class AddPos(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(4))

    def forward(self, x):
        x += self.pos
        return x


def init_params(size):
    return torch.randn(size).requires_grad_()
"""

MAIN = """\
import torch
from models import AddPos

a = torch.randn(3, 4, requires_grad=True)
h = torch.sigmoid(a)
out = AddPos()(h)
(out * h).sum().backward()
"""


def placed(path: Path) -> list:
    """The findings of the file at ``path``, each at its place (not the mirrors of those
    in other files, repeated at the calls in this one that led there)."""
    return [f for f in check_source(path.read_bytes(), str(path)) if f.mirror_of is None]


def lint(path: Path) -> set[tuple[str, int, str]]:
    return {(Path(f.path).name, f.line, f.code) for f in placed(path)}


def test_forward_in_another_file_is_followed_and_reported_where_it_writes(tree):
    root = tree({"models.py": MODELS, "main.py": MAIN})
    assert lint(root / "main.py") == {("models.py", 11, "GG201")}
    [finding] = placed(root / "main.py")
    assert "(line 5 of main.py)" in finding.message and "line 7 of main.py" in finding.message


def test_a_write_in_another_file_names_the_call_that_handed_the_tensor_over(tree):
    root = tree({"models.py": MODELS, "main.py": MAIN})
    [finding] = placed(root / "main.py")
    assert "the call at line 6 of main.py handed it over" in finding.message


def test_a_tensor_the_callee_made_itself_names_the_call_whose_grad_mode_it_runs_in(tree):
    root = tree({"helpers.py": """\
        import torch


        def make():
            w = torch.zeros(2, requires_grad=True)
            w += 1
            return w
        """, "main.py": "import torch\nfrom helpers import make\n\nmake()\n"})
    findings = placed(root / "main.py")
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [("helpers.py", 6, "GG101")]
    assert "handed it over" not in findings[0].message
    assert "reached from the call at line 4 of main.py, with grad on" in findings[0].message


def test_a_write_in_a_function_analysed_on_its_own_names_no_call(tree):
    root = tree({"models.py": MODELS + "\n\nw = torch.zeros(2, requires_grad=True)\nw += 1\n"})
    [finding] = check_source((root / "models.py").read_bytes(), str(root / "models.py"))
    assert finding.code == "GG101" and "handed it over" not in finding.message


def test_a_leaf_made_by_a_helper_in_another_file(tree):
    root = tree({"models.py": MODELS, "main.py": """\
        import torch
        import models

        w = models.init_params((3,))
        (w * 2).sum().backward()
        w -= 0.1 * w.grad
        """})
    [finding] = check_source((root / "main.py").read_bytes(), str(root / "main.py"))
    assert (finding.line, finding.code) == (6, "GG101")
    assert "line 16 of models.py" in finding.message


def test_a_module_too_large_to_analyse_gives_unknowns(tree, monkeypatch):
    """A module whose tree alone would take a quarter of the memory budget (torch's
    generated tables) is not analysed for an import: what it binds is unknown."""
    main = """\
        import torch
        import models

        w = models.init_params((3,))
        w -= 0.1
        """
    root = tree({"models.py": MODELS, "main.py": main})
    source = (root / "main.py").read_bytes()
    assert [f.code for f in check_source(source, str(root / "main.py"))] == ["GG101"]
    monkeypatch.setattr(memory, "BUDGET", len(MODELS) * memory.TREE_BYTES_PER_SOURCE_BYTE * 4)
    (root / "models.py").write_text(MODELS + "\n")  # a new version: analysed again, or not
    assert check_source(source, str(root / "main.py")) == []


def test_relative_import_inside_a_package(tree):
    root = tree({"pkg/__init__.py": "from .models import AddPos\n", "pkg/models.py": MODELS,
                 "main.py": MAIN.replace("from models import", "from pkg import")})
    assert lint(root / "main.py") == {("models.py", 11, "GG201")}


def test_absolute_import_from_the_package_root(tree):
    root = tree({"pkg/__init__.py": "", "pkg/models.py": MODELS,
                 "pkg/train.py": MAIN.replace("from models import", "from pkg.models import")})
    assert lint(root / "pkg" / "train.py") == {("models.py", 11, "GG201")}


def test_unresolved_imports_and_cycles_stay_silent(tree):
    root = tree({
        "a.py": "import torch\nfrom b import make\nw = make()\nw.add_(1)\n",
        "b.py": "import torch\nfrom a import w\ndef make():\n    return torch.ones(1, requires_grad=True)\n",
        "c.py": "import torch\nfrom nowhere import make\nw = make()\nw.add_(1)\n",
    })
    assert lint(root / "a.py") == {("a.py", 4, "GG101")}  # b's import of a is a cycle: unknown
    assert lint(root / "c.py") == set()


def test_an_edited_module_is_analysed_again(tree):
    root = tree({"models.py": MODELS, "main.py": MAIN})
    assert lint(root / "main.py")
    (root / "models.py").write_text(MODELS.replace("x += self.pos", "x = x + self.pos"))
    assert lint(root / "main.py") == set()


def test_resolution_roots(tree):
    root = tree({"pyproject.toml": "", "src/lib/__init__.py": "", "src/lib/core.py": "",
                 "scripts/run.py": ""})
    project = Project()
    run = str(root / "scripts" / "run.py")
    assert project.resolve(run, "lib.core") == root / "src" / "lib" / "core.py"
    assert project.resolve(run, "lib") == root / "src" / "lib" / "__init__.py"
    assert project.resolve(run, "missing") is None
    core = str(root / "src" / "lib" / "core.py")
    assert project.resolve(core, "", 1) == root / "src" / "lib" / "__init__.py"


def test_cli_reports_once_and_applies_the_modules_noqa(tree):
    tree({"models.py": MODELS, "main.py": MAIN, "other.py": MAIN})
    result = gg("check", "main.py", "other.py", "models.py")
    assert result.exit_code == 1
    assert [line.split(" ")[0:2] for line in result.stdout.splitlines()] == [
        ["models.py:11:9:", "GG201"]]
    tree({"models.py": MODELS.replace("x += self.pos", "x += self.pos  # noqa: GG201")})
    assert gg("check", "main.py").exit_code == 0


def test_a_module_reached_through_a_linked_folder_is_one_place(tree):
    """Linting a folder through a link, the imported module keeps the linted spelling: the
    write is one finding at one path, not two (one through the link, one resolved)."""
    root = tree({"real/models.py": MODELS, "real/main.py": MAIN})
    (root / "linked").symlink_to(root / "real", target_is_directory=True)
    lines = gg("check", "linked").stdout.splitlines()
    assert [line.split(" ")[0:2] for line in lines] == [["linked/models.py:11:9:", "GG201"]]


def test_check_of_the_caller_alone_also_reports_the_write_at_the_call(tree):
    """As pre-commit runs it on the changed files: models.py is not linted."""
    tree({"models.py": MODELS, "main.py": MAIN})
    lines = gg("check", "main.py").stdout.splitlines()
    assert [line.split(": ")[0:2] for line in lines] == [
        ["main.py:6:7", "GG201 in models.py:11 (reached from this call)"],
        ["models.py:11:9", "GG201 the output of `torch.sigmoid` (line 5 of main.py) was saved"
                           " for backward; modifying it in place here with `+=` makes the "
                           "backward at line 7 of main.py fail; the call at line 6 of main.py"
                           " handed it over. Use an out-of-place op or mutate a `.clone()`"]]
    tree({"main.py": MAIN.replace("(h)\n", "(h)  # noqa: GG201\n")})  # silences the mirror
    assert [line.split(" ")[0] for line in gg("check", "main.py").stdout.splitlines()] == [
        "models.py:11:9:"]


def test_a_chain_through_several_files_is_mirrored_at_the_outermost_call(tree):
    root = tree({"models.py": MODELS,
                 "blocks.py": "from models import AddPos\n\n\ndef block(x):\n"
                              "    return AddPos()(x)\n",
                 "main.py": MAIN.replace("from models import AddPos", "from blocks import block")
                                .replace("AddPos()(h)", "block(h)")})
    mirrors = [f for f in check_source((root / "main.py").read_bytes(), str(root / "main.py"))
               if f.mirror_of is not None]
    assert [(f.path, f.line, f.col, f.code, f.mirror_of) for f in mirrors] == [
        (str(root / "main.py"), 6, 7, "GG201", ("models.py", 11, 9))]
    assert mirrors[0].message.startswith("in models.py:11 (reached from this call): ")


def test_stdin_with_a_filename_on_disk_follows_its_imports(tree):
    tree({"models.py": MODELS, "main.py": "x = 1\n"})
    result = gg("check", "--stdin-filename", "main.py", "-", stdin=MAIN.encode())
    assert "models.py:11:9: GG201" in result.stdout


def test_flake8_reports_a_write_in_another_file_at_the_call_that_led_there(tree):
    root = tree({"models.py": MODELS, "main.py": MAIN})
    lines = (root / "main.py").read_text().splitlines(keepends=True)
    [(line, column, text, _)] = GradguardPlugin(None, lines, str(root / "main.py")).run()
    assert (line, column) == (6, 6)  # AddPos()(h): the call of the forward that writes
    assert text.startswith("GG201 in models.py:11 (reached from this call): the output of")
