"""Jupyter notebooks: linted as the Python of their code cells, findings at cell and line,
IPython syntax skipped, fixes and ``noqa`` comments written back into the JSON with every
other byte kept."""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from cli_helpers import file_writer, gg

from gradguard.domain.findings import Finding
from gradguard.runs import linting, notebooks
from gradguard.runs.notebooks import MAGIC_PLACEHOLDER, Notebook, NotebookError

SETUP = ["%matplotlib inline\n", "import torch\n", "!nvidia-smi\n",
         "w = torch.randn(3, requires_grad=True)"]
# cell 3, line 1: GG101 (a leaf written in place), fixable; line 2: suppressed by noqa
TRAIN = ["w.add_(1)\n", "w.mul_(2)  # noqa: GG101\n", "loss = (w * 2).sum()"]


def notebook_json(*code_cells, markdown_first: bool = True, language: str = "python",
                  source_as_text: bool = False) -> str:
    """A notebook as Jupyter writes it (indent 1, non-ASCII unescaped, a final newline):
    a markdown cell, then ``code_cells`` (each a list of lines), with outputs and ids."""
    cells = [{"cell_type": "markdown", "id": "md", "metadata": {},
              "source": ["# Training ✓\n"]}] if markdown_first else []
    for number, lines in enumerate(code_cells):
        cells.append({"cell_type": "code", "execution_count": number + 1, "id": f"c{number}",
                      "metadata": {"tags": ["keep"]},
                      "outputs": [{"name": "stdout", "output_type": "stream",
                                   "text": ["tensor([1., 2.]) é\n"]}],
                      "source": "".join(lines) if source_as_text else lines})
    document = {"cells": cells,
                "metadata": {"kernelspec": {"display_name": "Python 3", "name": "python3"},
                             "language_info": {"name": language}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return file_writer(tmp_path)


def findings(result) -> list[dict]:
    return json.loads(result.stdout)


# --- reading: the Python text and the places -------------------------------------------


def test_ipython_lines_become_one_placeholder_each():
    python, magics = notebooks.python_of(
        "%load_ext autoreload\nif True:\n    !ls\n    x = 1\nfiles = !ls\ntorch.zeros?\n"
        "%pip install \\\n    torch\n")
    assert python.splitlines() == [
        MAGIC_PLACEHOLDER, "if True:", "    " + MAGIC_PLACEHOLDER, "    x = 1",
        MAGIC_PLACEHOLDER, MAGIC_PLACEHOLDER, MAGIC_PLACEHOLDER, MAGIC_PLACEHOLDER]
    assert magics == ("%load_ext autoreload", "    !ls", "files = !ls", "torch.zeros?",
                      "%pip install \\", "    torch")
    compile(python, "<cell>", "exec")


def test_wildcard_help_is_ipython():
    assert notebooks.python_of("torch.*Tensor?\n")[0] == MAGIC_PLACEHOLDER + "\n"


def test_an_indented_cell_runs_dedented_as_in_ipython(project):
    """IPython takes the first line's indentation off every line (``leading_indent``):
    such a cell is no syntax error, its columns are the notebook's, a fix keeps it."""
    path = project("train.ipynb", notebook_json(SETUP, [" w.add_(1)\n", " w.sum()"]))
    [finding] = findings(gg("check", "--no-cache", "--format", "json", "train.ipynb"))
    assert (finding["code"], finding["cell"], finding["line"], finding["col"],
            finding["end_col"]) == ("GG101", 3, 1, 2, 11)
    assert gg("check", "--no-cache", "--fix", "train.ipynb").exit_code == 0
    assert json.loads(path.read_text(encoding="utf-8"))["cells"][2]["source"] == [
        " with torch.no_grad():\n", "     w.add_(1)\n", " w.sum()"]


@pytest.mark.parametrize("magic, body_linted", [("%%time", True), ("%%bash", False)])
def test_a_cell_magic_body_is_python_only_for_python_magics(magic, body_linted):
    python, _ = notebooks.python_of(f"{magic}\n  w.add_(1)\n")
    assert ("w.add_(1)" in python) == body_linted
    compile(python if not body_linted else python.replace("  w", "w"), "<cell>", "exec")


@pytest.mark.parametrize("text", [
    'print("acc: %.2f"\n      % (acc))\n',  # Torch-Pruning, captum
    'x = ("%d"\n% (3))\n',
    'x = 1 + \\\n%d\n',
    'x = f(a,  # a comment (\n      !b)\n',
    's = """\n%not a magic\n"""\n',
    "s = 'a\\\n%b'\n",
])
def test_a_line_that_does_not_start_a_statement_is_python(text):
    """IPython's transforms read the first token of a logical line: a line inside
    brackets or a string, or after a backslash, is never IPython syntax."""
    assert notebooks.python_of(text) == (text, ())


@pytest.mark.parametrize("text", [
    'x = "(" + "[" # {\n!ls\n',
    's = "a"""\n!ls\n',
    "s = '''\n(\n'''\n!ls\n",
    '!echo (\n!ls\n',
])
def test_brackets_and_quotes_in_strings_comments_and_magics_are_closed(text):
    python, magics = notebooks.python_of(text)
    assert magics[-1] == "!ls" and python.endswith(MAGIC_PLACEHOLDER + "\n")


def test_a_python_cell_magic_body_is_read_as_a_cell_of_its_own():
    """IPython runs the body of ``%%capture`` (``%%time``, ...) as a cell: its own shell
    lines, magics and cell magic are IPython's, the rest is linted."""
    python, magics = notebooks.python_of(
        "%%capture\n!pip install speechbrain\n%%time\nw = 1\n!wget https://x/y.wav\n")
    assert python.splitlines() == [MAGIC_PLACEHOLDER] * 3 + ["w = 1", MAGIC_PLACEHOLDER]
    assert magics == ("%%capture", "!pip install speechbrain", "%%time",
                      "!wget https://x/y.wav")


def test_a_cell_magic_after_blank_lines_is_the_cells():
    """IPython drops a cell's leading blank lines before it looks for a cell magic."""
    python, magics = notebooks.python_of("\n%%bash\nls -l\n")
    assert python.splitlines() == ["", MAGIC_PLACEHOLDER, MAGIC_PLACEHOLDER]
    assert magics == ("%%bash", "ls -l")


def test_the_margin_is_the_first_line_that_is_not_blank():
    notebook = Notebook.read(notebook_json(["\n", "  x = 1\n", "  y = 2"]))
    assert notebook.cells[0].margin == "  "
    compile(notebook.python, "<cell>", "exec")


def test_lines_map_back_to_cells_counted_among_all_cells():
    notebook = Notebook.read(notebook_json(SETUP, TRAIN))
    assert [cell.number for cell in notebook.cells] == [2, 3]  # the markdown cell is 1
    first_of_train = notebook.python_line(3, 1)
    assert notebook.python.splitlines()[first_of_train - 1] == "w.add_(1)"
    assert notebook.position(first_of_train) == "cell 3:1"
    assert notebook.cited_line(4) == "4 of cell 2"


def test_findings_sort_by_cell_before_line():
    later_cell = Finding("train.ipynb", 1, 1, "GG101", "m", cell=3)
    earlier_cell = Finding("train.ipynb", 5, 1, "GG101", "m", cell=2)
    assert sorted([later_cell, earlier_cell]) == [earlier_cell, later_cell]
    assert later_cell != replace(later_cell, cell=2)


def test_a_notebook_in_another_language_has_no_python():
    assert Notebook.read(notebook_json(TRAIN, language="R")).python == ""


def test_a_fix_that_moves_code_across_cells_is_refused():
    notebook = Notebook.read(notebook_json(SETUP, TRAIN))
    with pytest.raises(NotebookError, match="cell boundary"):
        notebook.changed_cells(notebook.python.replace(notebooks.CELL_BOUNDARY, "pass"))


# --- the notebooks in tests/data/notebooks ----------------------------------------------

NOTEBOOKS = Path(__file__).parent / "data" / "notebooks"
# What each notebook holds: its one finding (code, cell, line); None: no finding
EXPECTED = {"capture_install.ipynb": ("GG101", 4, 2),
            "percent_continuation.ipynb": ("GG101", 3, 6),
            "ipython_syntax.ipynb": None}


def test_every_notebook_fixture_has_its_expectation():
    assert sorted(path.name for path in NOTEBOOKS.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_notebook_fixture_is_linted_with_its_finding_in_its_cell(name):
    """Each is linted as a whole (no GG001), the finding at the cell and line it is on."""
    result = gg("check", "--no-cache", "--format", "json", str(NOTEBOOKS / name))
    found = [(f["code"], f["cell"], f["line"]) for f in findings(result)]
    assert found == ([EXPECTED[name]] if EXPECTED[name] else [])


def test_a_fix_after_a_capture_cell_goes_into_its_cell(project):
    """The ``%%capture`` cell's ``!`` lines do not move the fixed cell's lines."""
    path = project("install.ipynb", (NOTEBOOKS / "capture_install.ipynb").read_text())
    before = json.loads(path.read_text(encoding="utf-8"))
    assert gg("check", "--no-cache", "--fix", "install.ipynb").exit_code == 0
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][3]["source"] == ["w = torch.ones(3, requires_grad=True)\n",
                                           "with torch.no_grad():\n", "    w *= 2"]
    del before["cells"][3]["source"], after["cells"][3]["source"]
    assert after == before


def _ipython_runs(source: str) -> bool:
    """Whether IPython would run the cell ``source`` rather than fail to compile it: its
    transform (``TransformerManager``, the reference for what a cell means) is Python, and
    so, for a cell magic whose body IPython transforms and runs, is that body's."""
    inputtransformer2 = pytest.importorskip("IPython.core.inputtransformer2")
    try:
        module = ast.parse(inputtransformer2.TransformerManager().transform_cell(source))
    except SyntaxError:
        return False
    match module.body:
        case [ast.Expr(ast.Call(ast.Attribute(attr="run_cell_magic"),
                                [ast.Constant(name), _, ast.Constant(body)]))] \
                if name in notebooks.PYTHON_CELL_MAGICS:
            return _ipython_runs(body)
    return True


def _notebook_cells() -> list:
    """Each code cell of the notebook fixtures, as a parameter named by its place."""
    return [pytest.param(cell, id=f"{path.name}:cell {cell.number}")
            for path in sorted(NOTEBOOKS.glob("*.ipynb"))
            for cell in Notebook.read(path.read_bytes()).cells]


@pytest.mark.parametrize("cell", _notebook_cells())
def test_where_ipython_runs_a_cell_gradguard_reads_python(cell):
    """gradguard's Python for the cell compiles wherever IPython's reading of it does: no
    GG001 for a cell that runs."""
    where = f"cell {cell.number}"
    assert _ipython_runs(cell.source), f"{where}: a fixture IPython itself cannot run"
    compile(cell.python, where, "exec")


# --- the command line -------------------------------------------------------------------


def test_findings_are_reported_at_cell_and_line(project):
    project("train.ipynb", notebook_json(SETUP, TRAIN))
    result = gg("check", "--no-cache", "train.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("train.ipynb:cell 3:1:1: GG101 in-place `add_` on leaf "
                                    "tensor `w` that requires grad (line 4 of cell 2)")
    assert result.stdout.count("GG101") == 1  # cell 3 line 2: its noqa holds


def test_json_and_sarif_carry_the_cell(project):
    project("train.ipynb", notebook_json(SETUP, TRAIN))
    [finding] = findings(gg("check", "--no-cache", "--format", "json", "train.ipynb"))
    assert (finding["cell"], finding["line"], finding["col"]) == (3, 1, 1)
    assert finding["fix"]["edits"][0]["line"] == 1  # the fix's places are the cell's too
    sarif = json.loads(gg("check", "--no-cache", "--format", "sarif", "train.ipynb").stdout)
    [result] = sarif["runs"][0]["results"]
    assert result["properties"]["cell"] == 3
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_line_formats_name_the_cell(project, monkeypatch):
    project("train.ipynb", notebook_json(SETUP, TRAIN))
    concise = gg("check", "--no-cache", "--output-format", "concise", "train.ipynb").stdout
    assert concise.startswith("train.ipynb:cell 3:1:1: GG101 [*] in-place `add_`")
    github = gg("check", "--no-cache", "--output-format", "github", "train.ipynb").stdout
    assert ",line=1,col=1," in github and "::cell 3: in-place `add_`" in github
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    [entry] = json.loads(gg("check", "--no-cache", "--output-format", "gitlab",
                            "train.ipynb").stdout)
    assert entry["description"].startswith("GG101: cell 3: in-place `add_`")


def test_sarif_fingerprint_reads_the_cells_line(project):
    """The fingerprint hashes the finding's own line (the cell's first), not the line of
    that number in the notebook's first cell."""
    def fingerprint(setup):
        project("train.ipynb", notebook_json(setup, TRAIN))
        sarif = json.loads(gg("check", "--no-cache", "--format", "sarif", "train.ipynb").stdout)
        [result] = sarif["runs"][0]["results"]
        return result["partialFingerprints"]["primaryLocationLineHash"]
    assert fingerprint(SETUP) == fingerprint(["# setup\n"] + SETUP[1:])


def test_full_format_shows_the_cell_source(project):
    project("train.ipynb", notebook_json(SETUP, TRAIN))
    result = gg("check", "--no-cache", "--format", "full", "train.ipynb")
    assert "--> train.ipynb:cell 3:1:1" in result.stdout
    assert "1 | w.add_(1)" in result.stdout


def test_directories_walk_into_notebooks_and_settings_apply(project):
    project("nb/train.ipynb", notebook_json(SETUP, TRAIN))
    project("nb/skip.ipynb", notebook_json(SETUP, TRAIN))
    project("pyproject.toml", '[tool.gradguard]\nextend-exclude = ["skip.ipynb"]\n')
    assert [f["path"] for f in findings(gg("check", "--no-cache", "--format", "json", "."))] \
        == ["nb/train.ipynb"]
    project("pyproject.toml", '[tool.gradguard]\nextend-exclude = ["skip.ipynb"]\n'
                              '[tool.gradguard.per-file-ignores]\n"*.ipynb" = ["GG101"]\n')
    assert gg("check", "--no-cache", ".").exit_code == 0


def test_a_notebook_that_is_not_json_is_a_diagnostic_not_a_crash(project):
    project("broken.ipynb", '{"cells": [\n  {"cell_type": "code" "source": []}\n]}')
    result = gg("check", "--no-cache", "broken.ipynb")
    assert result.exit_code == 1
    assert result.stdout == ("broken.ipynb:2:24: GG002 cannot read notebook: not valid JSON "
                             "(Expecting ',' delimiter)\n")


def test_the_cache_keeps_the_cells(project, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADGUARD_NO_CACHE", raising=False)
    linted = []
    real = linting.lint_source
    monkeypatch.setattr(linting, "lint_source",
                        lambda path, *rest: linted.append(path) or real(path, *rest))
    path = project("train.ipynb", notebook_json(SETUP, TRAIN))
    cache = str(tmp_path / "cache")
    first = gg("check", "--cache-dir", cache, "--show-source", "train.ipynb").stdout
    assert gg("check", "--cache-dir", cache, "--show-source", "train.ipynb").stdout == first
    assert linted == ["train.ipynb"] and "cell 3:1:1" in first and "\nw.add_(1)\n" in first
    path.write_text(notebook_json(SETUP, ["w.add_(2)\n"] + TRAIN), encoding="utf-8")
    assert "cell 3:2:1" in gg("check", "--cache-dir", cache, "train.ipynb").stdout
    assert linted == ["train.ipynb"] * 2


def _changed_lines(before: str, after: str) -> list[str]:
    """The lines removed (``-``) and added (``+``), without their indentation."""
    return sorted(line[0] + line[2:].strip()
                  for line in difflib.ndiff(before.splitlines(), after.splitlines())
                  if line[:1] in "+-")


@pytest.mark.parametrize("source_as_text", [False, True])
def test_fix_rewrites_only_the_changed_cells_source(project, source_as_text):
    before = notebook_json(SETUP, TRAIN, source_as_text=source_as_text)
    path = project("train.ipynb", before)
    result = gg("check", "--no-cache", "--fix", "train.ipynb")
    assert result.exit_code == 0, result.stdout
    after = path.read_text(encoding="utf-8")
    old, new = json.loads(before), json.loads(after)
    fixed_source = "".join(new["cells"][2].pop("source"))
    assert fixed_source == ("with torch.no_grad():\n    w.add_(1)\n"
                            "w.mul_(2)  # noqa: GG101\nloss = (w * 2).sum()")
    del old["cells"][2]["source"]
    assert new == old  # outputs, ids, metadata: as they were
    changed = _changed_lines(before, after)
    if source_as_text:
        assert len(changed) == 2  # the one line holding the source string
    else:
        assert changed == ['+"    w.add_(1)\\n",', '+"with torch.no_grad():\\n",',
                           '-"w.add_(1)\\n",']
    assert after.endswith("}\n")


def test_fix_keeps_the_ipython_lines_of_a_changed_cell(project):
    cell = ["if True:\n", "    !nvidia-smi\n", "    w.add_(1)\n", "%time w.sum()"]
    path = project("train.ipynb", notebook_json(SETUP, cell))
    assert gg("check", "--no-cache", "--fix", "train.ipynb").exit_code == 0
    assert json.loads(path.read_text(encoding="utf-8"))["cells"][2]["source"] == [
        "if True:\n", "    !nvidia-smi\n", "    with torch.no_grad():\n",
        "        w.add_(1)\n", "%time w.sum()"]


def test_diff_shows_each_changed_cell_and_writes_nothing(project):
    before = notebook_json(SETUP, TRAIN)
    path = project("train.ipynb", before)
    result = gg("check", "--no-cache", "--diff", "train.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith("--- train.ipynb:cell 3\n+++ train.ipynb:cell 3\n")
    assert "+with torch.no_grad():\n+    w.add_(1)\n" in result.stdout
    assert path.read_text(encoding="utf-8") == before


def test_add_noqa_writes_into_the_cell(project):
    before = notebook_json(SETUP, TRAIN)
    path = project("train.ipynb", before)
    assert gg("check", "--no-cache", "--add-noqa", "train.ipynb").exit_code == 0
    assert _changed_lines(before, path.read_text(encoding="utf-8")) == [
        '+"w.add_(1)  # noqa: GG101\\n",', '-"w.add_(1)\\n",']
    assert gg("check", "--no-cache", "train.ipynb").exit_code == 0


def test_a_notebook_large_with_outputs_is_linted_in_the_run(project, monkeypatch):
    """Its bytes are mostly outputs: not a large file to lint in a process of its own."""
    document = json.loads(notebook_json(SETUP, TRAIN))
    document["cells"][1]["outputs"][0]["text"] = ["x" * 100 + "\n"] * 10_000  # 1 MB
    project("train.ipynb", json.dumps(document))
    project("other.py", "import torch\n")
    monkeypatch.setattr(linting, "lint_path_apart", lambda *_: pytest.fail("spawned"))
    assert gg("check", "--no-cache", "--jobs", "1", ".").exit_code == 1


def test_explain_says_it_does_not_read_notebooks(project):
    project("train.ipynb", notebook_json(SETUP, TRAIN))
    result = gg("explain", "train.ipynb:3")
    assert result.exit_code == 2 and "explain reads Python files, not notebooks" in result.stderr


def test_the_pre_commit_hooks_declare_notebooks():
    yaml = pytest.importorskip("yaml")  # pre-commit's own dependency, not gradguard's
    hooks = yaml.safe_load((Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text())
    assert hooks and all(set(hook["types_or"]) == {"python", "jupyter"} and "types" not in hook
                         for hook in hooks)
