"""The language server, driven as an editor drives it: ``python -m gradguard server`` in a
subprocess, JSON-RPC over its pipes (tests/lsp_client.py), every wait with a timeout.
The pure parts (positions, noqa edits, fix-all) are tested in-process below."""

from __future__ import annotations

import sys
import textwrap

import pytest

pytest.importorskip("pygls")

from lsp_client import SERVER, Client, change  # noqa: E402

from gradguard.domain.findings import SAFE, UNSAFE, Edit, Finding, Fix  # noqa: E402
from gradguard.editing.fixes import select_fixes  # noqa: E402
from gradguard.frontends import server  # noqa: E402

BUGGY = "import torch\nw = torch.zeros(3, requires_grad=True)\nw.mul_(2)\n"
CLEAN = "import torch\nw = torch.zeros(3, requires_grad=True)\nw = w.mul(2)\n"
TIMEOUT = 60.0  # a cold start imports libcst, pygls and the rules: seconds on a busy machine
FAST = ("--debounce", "0.02")


@pytest.fixture
def client(tmp_path):
    clients = []

    def start(command=(*SERVER, *FAST)) -> Client:
        clients.append(Client(command, cwd=tmp_path, timeout=TIMEOUT))
        clients[-1].initialized = clients[-1].initialize(tmp_path)
        return clients[-1]

    yield start
    for started in clients:
        started.kill()


def test_diagnostics_code_actions_and_shutdown(client, tmp_path):
    lsp = client()  # python -m gradguard server: what editors are told to run
    assert lsp.initialized["serverInfo"]["name"] == "gradguard"
    capabilities = lsp.initialized["capabilities"]
    assert capabilities["codeActionProvider"]["codeActionKinds"] == [
        "quickfix", "source.fixAll.gradguard"]
    assert capabilities["textDocumentSync"]["save"] and capabilities["textDocumentSync"]["change"]
    uri = (tmp_path / "train.py").as_uri()  # not on disk: the editor's text is linted
    lsp.open(uri, BUGGY)
    (found,) = lsp.diagnostics(uri, version=1)
    assert found["code"] == "GG101" and found["source"] == "gradguard"
    assert found["severity"] == 2 and "mul_" in found["message"]
    assert found["range"] == {"start": {"line": 2, "character": 0},
                              "end": {"line": 2, "character": 9}}
    assert found["codeDescription"]["href"].endswith("docs/rules.md#leaf-inplace-gg101")

    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": found["range"],
        "context": {"diagnostics": [found]}})
    assert [action["title"] for action in actions] == [
        "Run the write under `torch.no_grad()`", "Add `# noqa: GG101`",
        "gradguard: fix all safely fixable problems"]
    (fix,) = actions[0]["edit"]["documentChanges"]  # the rule's own fix, as --fix applies it
    assert actions[0]["isPreferred"] and fix["edits"] == [
        {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 0}},
         "newText": "with torch.no_grad():\n    "}]
    (change,) = actions[1]["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 1}
    assert change["edits"] == [{"range": {"start": {"line": 2, "character": 9},
                                          "end": {"line": 2, "character": 9}},
                                "newText": "  # noqa: GG101"}]

    lsp.change(uri, CLEAN, version=2)
    assert lsp.diagnostics(uri, version=2) == []
    assert lsp.close() == 0


def test_a_differentiable_write_gets_no_no_grad_quick_fix(client, tmp_path):
    """``bias += encoder(x)`` writes a value that requires grad: the quick fix keeps it in
    the graph (unsafe, not preferred), and fix-all, which takes safe fixes only, has
    nothing to do."""
    lsp = client()
    uri = (tmp_path / "train.py").as_uri()
    lsp.open(uri, "import torch\nencoder = torch.nn.Linear(3, 4)\n"
                  "bias = torch.zeros(4, requires_grad=True)\n"
                  "bias += encoder(torch.randn(2, 3)).mean(0)\n")
    (found,) = lsp.diagnostics(uri, version=1)
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": found["range"],
        "context": {"diagnostics": [found]}})
    assert [action["title"] for action in actions] == [
        "Make the write out of place (keeps it in the graph) (unsafe)", "Add `# noqa: GG101`"]
    assert actions[0]["isPreferred"] is False
    (fix,) = actions[0]["edit"]["documentChanges"]
    assert [edit["newText"] for edit in fix["edits"]] == [
        "bias = bias + encoder(torch.randn(2, 3)).mean(0)"]
    assert lsp.close() == 0


def test_fix_actions_from_findings_that_carry_fixes(client, tmp_path):
    """Rules attach fixes on their own schedule: here the server's linter is patched (in
    the subprocess) to give every GG101 a hand-built fix, safe for ``mul_``, unsafe else."""
    patch = textwrap.dedent("""
        import sys
        from gradguard.frontends import cli, server
        from gradguard.domain.findings import Edit, Fix
        from dataclasses import replace

        lint_source = server.lint_source

        def with_fixes(path, source, plan, **given):
            outcome = lint_source(path, source, plan, **given)
            for index, finding in enumerate(outcome.findings):
                op = "mul" if "mul_" in finding.message else "add"
                safe = op == "mul"
                fix = Fix(f"Use the out-of-place `{op}`", "safe" if safe else "unsafe",
                          (Edit(finding.line, 1, finding.line, 7, f"w = w.{op}"),))
                outcome.findings[index] = replace(finding, fix=fix)
            return outcome

        server.lint_source = with_fixes
        sys.argv = ["gradguard", "server", *sys.argv[1:]]
        cli.main(prog_name="gradguard")
    """)
    lsp = client((sys.executable, "-c", patch, *FAST))
    uri = (tmp_path / "train.py").as_uri()
    lsp.open(uri, BUGGY + "w.add_(1)\n", version=7)
    found = lsp.diagnostics(uri, version=7)
    assert [d["code"] for d in found] == ["GG101", "GG101"]
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 4, "character": 0}}
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": found}})
    titles = {action["title"]: action for action in actions}
    assert set(titles) == {"Use the out-of-place `mul`", "Use the out-of-place `add` (unsafe)",
                           "Add `# noqa: GG101`", "gradguard: fix all safely fixable problems"}
    safe = titles["Use the out-of-place `mul`"]
    assert safe["kind"] == "quickfix" and safe["isPreferred"] is True
    assert safe["diagnostics"] == [found[0]]
    (change,) = safe["edit"]["documentChanges"]
    assert change["edits"] == [{"range": {"start": {"line": 2, "character": 0},
                                          "end": {"line": 2, "character": 6}},
                                "newText": "w = w.mul"}]
    assert titles["Use the out-of-place `add` (unsafe)"]["isPreferred"] is False
    fix_all = titles["gradguard: fix all safely fixable problems"]
    assert fix_all["kind"] == "source.fixAll.gradguard"
    assert fix_all["edit"]["documentChanges"][0]["edits"] == change["edits"]  # safe only

    only = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole,
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [action["kind"] for action in only] == ["source.fixAll.gradguard"]
    assert lsp.close() == 0


def test_configuration_noqa_excludes_and_the_text_not_the_disk(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gradguard]\nper-file-ignores = { "scratch_*.py" = ["GG101"] }\n')
    (tmp_path / "train.py").write_text(CLEAN)  # on disk: clean; in the editor: buggy
    lsp = client()
    train = (tmp_path / "train.py").as_uri()
    lsp.open(train, BUGGY)
    assert [d["code"] for d in lsp.diagnostics(train, version=1)] == ["GG101"]
    scratch = (tmp_path / "scratch_1.py").as_uri()
    lsp.open(scratch, BUGGY)
    assert lsp.diagnostics(scratch, version=1) == []
    lsp.change(train, BUGGY.replace("mul_(2)", "mul_(2)  # noqa: GG101"), version=2)
    assert lsp.diagnostics(train, version=2) == []
    excluded = (tmp_path / ".venv" / "lib" / "x.py").as_uri()
    lsp.open(excluded, BUGGY)
    assert lsp.diagnostics(excluded, version=1) == []
    assert lsp.close() == 0


def test_findings_in_imported_files_are_shown_in_those_files(client, tmp_path):
    """As ``check train.py`` reports ``helpers.py:2:5``: the write is in helpers.py."""
    (tmp_path / "helpers.py").write_text("def scale(t):\n    t.mul_(2)\n")
    text = "import torch\nfrom helpers import scale\nw = torch.zeros(3, requires_grad=True)\n"
    (tmp_path / "train.py").write_text(text)  # imports are followed from a file on disk
    lsp = client()
    train, helpers = ((tmp_path / name).as_uri() for name in ("train.py", "helpers.py"))
    lsp.open(train, text + "scale(w)\n")
    assert lsp.diagnostics(train, version=1) == []
    (found,) = lsp.diagnostics(helpers)
    assert found["code"] == "GG101" and "line 4 of train.py" in found["message"]
    # placed by the import's analysis, without an end: the token at its start
    assert found["range"] == {"start": {"line": 1, "character": 4},
                              "end": {"line": 1, "character": 5}}
    lsp.open(helpers, (tmp_path / "helpers.py").read_text())  # its own lint finds nothing
    assert [d["code"] for d in lsp.diagnostics(helpers, version=1)] == ["GG101"]
    actions = lsp.request("textDocument/codeAction", {
        "textDocument": {"uri": helpers}, "range": found["range"],
        "context": {"diagnostics": [found]}})
    assert [action["title"] for action in actions] == ["Add `# noqa: GG101`"]
    lsp.notify("textDocument/didClose", {"textDocument": {"uri": train}})
    assert lsp.diagnostics(helpers, version=1) == []
    assert lsp.close() == 0


def test_an_unsaved_buffer_is_linted_as_a_file_of_the_workspace(client, tmp_path):
    """``untitled:`` has no file: its text is linted with the workspace folder's settings
    and its imports resolve there (the write in ``helpers.py`` is shown in that file)."""
    (tmp_path / "pyproject.toml").write_text('[tool.gradguard]\nextend-select = ["GG900"]\n')
    (tmp_path / "helpers.py").write_text("import torch\n\n\ndef scale(p):\n    p.mul_(2)\n")
    lsp = client()
    lsp.open("untitled:Untitled-1", BUGGY + "x = 1  # noqa: GG101\n")
    found = lsp.diagnostics("untitled:Untitled-1", version=1)
    assert [d["code"] for d in found] == ["GG101", "GG900"]  # the folder's configuration
    lsp.open("untitled:Untitled-2", "import torch\nfrom helpers import scale\n"
                                    "w = torch.zeros(3, requires_grad=True)\nscale(w)\n")
    (there,) = lsp.diagnostics((tmp_path / "helpers.py").as_uri())
    assert there["code"] == "GG101" and "line 4 of Untitled-2.py" in there["message"]
    assert lsp.close() == 0


NOTEBOOK_CLIENT = {"notebookDocument": {"synchronization": {}},
                   "workspace": {"workspaceEdit": {"documentChanges": True}}}


def test_notebook_documents_get_diagnostics_per_cell(client, tmp_path):
    lsp = client()
    assert "notebookDocumentSync" not in lsp.initialized["capabilities"]  # not offered
    lsp.close()
    lsp = Client((*SERVER, *FAST), cwd=tmp_path, timeout=TIMEOUT)
    try:
        capabilities = lsp.initialize(tmp_path, NOTEBOOK_CLIENT)["capabilities"]
        assert capabilities["notebookDocumentSync"]["notebookSelector"][0]["cells"] == [
            {"language": "python"}]
        notebook = (tmp_path / "train.ipynb").as_uri()
        setup, notes, train = lsp.open_notebook(notebook, [
            ("code", "%matplotlib inline\nimport torch\nw = torch.zeros(3, requires_grad=True)\n"),
            ("markdown", "# Training"),
            ("code", "x = 1\nw.mul_(2)\n")])
        (found,) = lsp.diagnostics(train)
        assert found["code"] == "GG101" and "line 3 of cell 1" in found["message"]
        assert found["range"] == {"start": {"line": 1, "character": 0},
                                  "end": {"line": 1, "character": 9}}
        (action, *_) = lsp.request("textDocument/codeAction", {
            "textDocument": {"uri": train}, "range": found["range"],
            "context": {"diagnostics": [found]}})
        (edit,) = action["edit"]["documentChanges"]
        assert edit["textDocument"]["uri"] == train and edit["edits"][0]["range"]["start"] == {
            "line": 1, "character": 0}

        # one cell changes: the notebook is linted again, each cell's diagnostics sent
        lsp.change_cell(notebook, 2, setup, "import torch\nw = torch.zeros(3)\n", 2)
        assert lsp.diagnostics(train) == []  # w no longer requires grad
        lsp.change_cell(notebook, 3, setup, "import torch\nw = torch.zeros(3, "
                                            "requires_grad=True)\nw.add_(1)\n", 3)
        assert [d["code"] for d in lsp.diagnostics(setup)] == ["GG101"]
        assert [d["code"] for d in lsp.diagnostics(train)] == ["GG101"]
        lsp.notify("notebookDocument/didClose", {"notebookDocument": {"uri": notebook},
                                                 "cellTextDocuments": [
                                                     {"uri": uri} for uri in (setup, notes, train)]})
        assert lsp.diagnostics(setup) == [] and lsp.diagnostics(train) == []
        assert lsp.close() == 0
    finally:
        lsp.kill()


def test_stale_results_are_never_published(client, tmp_path):
    """Changes sent in one write, faster than any lint: every published result is that
    of the text of its version, versions only go up, and the last one is published."""
    lsp = client((*SERVER, "--debounce", "0"))
    uri = (tmp_path / "train.py").as_uri()
    lsp.open(uri, CLEAN)
    assert lsp.diagnostics(uri, version=1) == []
    texts = {version: BUGGY if version % 2 else CLEAN for version in range(2, 12)}
    lsp.burst([change(uri, text, version) for version, text in texts.items()])
    published = []
    while not published or published[-1]["version"] != 11:
        published.append(lsp.wait_for("textDocument/publishDiagnostics",
                                      lambda params: params["uri"] == uri))
    versions = [params["version"] for params in published]
    assert versions == sorted(set(versions))
    for params in published:
        expected = ["GG101"] if params["version"] % 2 else []
        assert [d["code"] for d in params["diagnostics"]] == expected, params["version"]
    assert lsp.close() == 0


def test_a_burst_of_changes_is_linted_once_after_the_debounce(client, tmp_path):
    lsp = client((*SERVER, "--debounce", "0.5"))
    uri = (tmp_path / "train.py").as_uri()
    lsp.open(uri, CLEAN)
    assert lsp.diagnostics(uri, version=1) == []
    lsp.burst([change(uri, BUGGY if version % 2 else CLEAN, version)
               for version in range(2, 8)])
    params = lsp.wait_for("textDocument/publishDiagnostics")
    assert params["version"] == 7 and [d["code"] for d in params["diagnostics"]] == ["GG101"]
    lsp.request("shutdown")  # a round trip: anything published before it is in by now
    assert not [n for n in lsp.notifications if n["method"] == "textDocument/publishDiagnostics"]
    lsp.notify("exit")
    assert lsp.process.wait(TIMEOUT) == 0


def test_bad_configuration_is_shown_not_fatal(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gradguard]\nselect = ["XX9"]\n')
    lsp = client()
    uri = (tmp_path / "train.py").as_uri()
    lsp.open(uri, BUGGY)
    message = lsp.wait_for("window/showMessage")
    assert message["type"] == 1 and "XX9" in message["message"]
    assert lsp.diagnostics(uri, version=1) == []
    (tmp_path / "pyproject.toml").write_text('[tool.gradguard]\nselect = ["GG101"]\n')
    lsp.change(uri, BUGGY, version=2)
    assert [d["code"] for d in lsp.diagnostics(uri, version=2)] == ["GG101"]
    assert lsp.close() == 0


# --- In-process: positions, noqa edits, fix-all ---------------------------------------------


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_positions_count_the_clients_units():
    lines = ['s = "😋"; w.mul_(2)']  # the emoji: one code point, two UTF-16 units
    finding = Finding("f.py", 1, 10, "GG101", "m", end_line=1, end_col=19)  # w.mul_(2)
    found = server.finding_range(finding, lines, utf16)
    assert (found.start.character, found.end.character) == (10, 19)
    found = server.finding_range(finding, lines, len)  # a client that counts code points
    assert (found.start.character, found.end.character) == (9, 18)


def test_a_finding_without_an_end_spans_its_token_or_the_line():
    lines = ["x = foo.bar(1)  ", "    ) oops"]
    assert server.finding_range(Finding("f.py", 1, 5, "GG101", "m"), lines, len).end.character == 7
    assert server.finding_range(Finding("f.py", 2, 5, "GG001", "m"), lines, len).end.character == 10
    beyond = server.finding_range(Finding("f.py", 9, 1, "GG001", "m"), lines, len)
    assert beyond.start.line == 1  # clamped to the text


@pytest.mark.parametrize("line, code, expected", [
    ("w.mul_(2)", "GG101", "w.mul_(2)  # noqa: GG101"),
    ("w.mul_(2)   ", "GG101", "w.mul_(2)  # noqa: GG101   "),
    ("w.mul_(2)  # noqa: GG2", "GG101", "w.mul_(2)  # noqa: GG2, GG101"),
    ("w.mul_(2)  # NOQA:GG201,GG202  keep this", "GG101",
     "w.mul_(2)  # NOQA:GG201,GG202, GG101  keep this"),
    ("w.mul_(2)  # type: ignore", "GG101", "w.mul_(2)  # type: ignore  # noqa: GG101"),
    ("w.mul_(2)  # noqa", "GG101", None),  # covered already
    ("w.mul_(2)  # noqa: GG1", "GG101", None),
    ("x = 1 + \\", "GG101", None),  # a comment cannot follow a continuation
])
def test_noqa_edit(line, code, expected):
    edit = server.noqa_edit([line], 1, code, len)
    if expected is None:
        assert edit is None
        return
    at = edit.range.start.character
    assert edit.range.start == edit.range.end
    assert line[:at] + edit.new_text + line[at:] == expected


def test_fix_all_keeps_fixes_that_do_not_overlap():
    def fix(*spans) -> Fix:
        return Fix("f", SAFE, tuple(Edit(line, col, line, end, "x") for line, col, end in spans))

    first, overlapping, later, same_start = (fix((1, 1, 5)), fix((1, 3, 8)), fix((1, 5, 6)),
                                             fix((1, 1, 1)))
    # fix-all takes what one round of --fix takes (fixes.select_fixes): a fix that
    # touches or overlaps an earlier one waits, and holds back what it touches in turn
    apart = fix((1, 7, 9))
    assert select_fixes([apart, later, overlapping, first]) == [first]
    assert select_fixes([apart, first]) == [first, apart]
    assert select_fixes([first, same_start]) == [same_start]  # order ambiguous
    assert select_fixes([fix((2, 1, 2), (3, 1, 2)), fix((3, 1, 1))])[1:] == []
    assert Fix("f", UNSAFE, ()).safe is False


def test_check_does_not_import_pygls():
    import subprocess

    code = ("import sys; from gradguard.frontends import cli; "
            "assert not any(m.startswith(('pygls', 'lsprotocol')) for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)


def test_the_same_text_again_is_not_parsed_again(monkeypatch):
    """A save lints the text of the last change again: its tree and positions are kept."""
    from gradguard.analysis import checker

    parses = []
    parse = checker.cst.parse_module
    monkeypatch.setattr(checker.cst, "parse_module", lambda text: parses.append(1) or parse(text))
    editor = checker.Session(keep_last_parse=True)  # as the server makes it
    text = BUGGY + "# a text no other test parses\n"
    first = checker.check_source(text, "train.py", session=editor)
    assert checker.check_source(text, "train.py", session=editor) == first and len(parses) == 1
    assert [f.code for f in first] == ["GG101"] and first[0].end_col == 10
    checker.check_source(CLEAN, "train.py", session=editor)
    assert len(parses) == 2
    command_line = checker.Session()  # the command line's default: the tree is not kept
    checker.check_source(text, "train.py", session=command_line)
    checker.check_source(text, "train.py", session=command_line)
    assert len(parses) == 4
