"""The ``gradguard`` command line: options, exit statuses, output streams, configuration,
and the pure selection and noqa logic behind them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
from cli_helpers import file_writer, gg

from gradguard.analysis import memory
from gradguard.configuration import config as configuration
from gradguard.configuration import files
from gradguard.configuration.files import DEFAULT_EXCLUDE, split_globs
from gradguard.configuration.options import CheckOptions
from gradguard.configuration.selection import (
    UnknownSelector,
    default_codes,
    known_codes,
    parse_selectors,
    resolve,
    validate,
)
from gradguard.domain.findings import Finding
from gradguard.editing.noqa import BLANKET, filter_noqa, noqa_codes, source_lines
from gradguard.frontends import cli
from gradguard.runs import cache as cache_module
from gradguard.runs import linting, settings

GG101_SAMPLE = "import torch\nx = torch.ones(1, requires_grad=True)\nx *= 100\n"
SYNTAX_ERROR = "x = 1\ndef f(:\n    pass\n"  # GG001 at 2:7
# GG302 at 3:1: a code to select and ignore (GG001 cannot be: it is always reported)
DATA_WRITE = "import torch\np = torch.nn.Parameter(torch.ones(2))\np.data.mul_(2)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty directory that is the current directory, with a writer for files."""
    monkeypatch.chdir(tmp_path)
    return file_writer(tmp_path)


def codes(result) -> list[str]:
    """The codes of the findings printed on stdout."""
    return [line.split(": ", 1)[1].split()[0] for line in result.stdout.splitlines()]


# --- Commands -----------------------------------------------------------------------------


def test_version_and_module_entry_point():
    assert "0.1.0" in gg("--version").stdout
    run = subprocess.run([sys.executable, "-m", "gradguard", "--version"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "gradguard" in run.stdout and "0.1.0" in run.stdout


def test_rules_lists_every_code_with_default():
    result = gg("rules")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(known_codes())
    gg101 = next(line for line in lines if line.startswith("GG101"))
    assert "leaf-inplace" in gg101 and " on " in gg101


@pytest.mark.parametrize("name", ["GG101", "gg101", "leaf-inplace"])
def test_rule_prints_docstring(name):
    result = gg("rule", name)
    assert result.exit_code == 0
    assert result.stdout.startswith("# leaf-inplace (GG101)")
    assert "## What it does" in result.stdout and "## Why is this bad?" in result.stdout


def test_rule_unknown_is_usage_error():
    result = gg("rule", "GG999")
    assert result.exit_code == 2 and "GG999" in result.stderr


def test_rule_says_default_and_fixability():
    lead = gg("rule", "GG308").stdout.split("\n\n")[1]
    assert lead == ("Torch.autograd.Variable / volatile= (legacy since 0.4). Disabled by "
                    "default. Fix is sometimes available.")
    assert "No automatic fix." in gg("rule", "GG202").stdout


@pytest.mark.parametrize("args", [("GG201",), ("saved-tensor-inplace", "--format", "json"),
                                  ("--all",), ("--all", "--format", "markdown")])
def test_explain_is_rule(args):
    rule, explain = gg("rule", *args), gg("explain", *args)
    assert rule.exit_code == explain.exit_code == 0
    assert rule.stdout == explain.stdout


def test_rule_all_explains_every_rule_in_code_order():
    from gradguard.rules import ALL_RULES
    titles = [line for line in gg("rule", "--all").stdout.splitlines()
              if line.startswith("# ")]
    assert titles == [f"# {rule.name} ({rule.code})" for rule in ALL_RULES]


def test_rule_formats():
    one = json.loads(gg("rule", "gg101", "--format", "json").stdout)
    assert one["code"] == "GG101" and one["name"] == "leaf-inplace"
    assert one["fixable"] == "sometimes" and one["default_enabled"] is True
    assert one["explanation"].startswith("## What it does\n")
    assert one["advisory"] is False and "raises" in one["torch_shows"]
    every = json.loads(gg("rule", "--all", "--format", "json").stdout)
    assert [entry["code"] for entry in every] == [c for c in known_codes() if c >= "GG1"]
    advisory = {entry["code"] for entry in every if entry["advisory"]}
    assert advisory == {"GG302", "GG308", "GG900"}
    assert all(entry["torch_shows"] for entry in every if not entry["advisory"])
    markdown = gg("rule", "GG101", "--format", "markdown").stdout
    assert markdown.startswith("## leaf-inplace (GG101)\n")
    assert "\n### Example\n```python\nimport torch\n" in markdown


@pytest.mark.parametrize("args", [(), ("GG101", "--all")])
def test_rule_needs_a_code_or_all(args):
    result = gg("rule", *args)
    assert result.exit_code == 2 and "--all" in result.stderr


# --- Output, summary, exit status ---------------------------------------------------------


def test_syntax_error_among_ok_files(project):
    project("pkg/bad.py", SYNTAX_ERROR)
    project("pkg/ok.py")
    result = gg("check")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        os.path.join("pkg", "bad.py") + ":2:7: GG001 syntax error: invalid syntax"]
    assert result.stderr.strip() == "1 finding in 1 file, 2 files checked"


def test_summary_only_on_stderr_and_plurals(project):
    project("a.py", SYNTAX_ERROR)
    project("b.py", "x = (\n")
    project("c.py")
    result = gg("check", ".")
    assert "checked" not in result.stdout and len(result.stdout.splitlines()) == 2
    assert result.stderr.strip() == "2 findings in 2 files, 3 files checked"
    assert gg("check", "c.py").stderr.strip() == "No findings, 1 file checked"


def test_quiet_and_exit_zero(project):
    project("a.py", SYNTAX_ERROR)
    quiet = gg("check", "-q")
    assert quiet.exit_code == 1 and quiet.stderr == "" and quiet.stdout
    assert gg("check", "--exit-zero").exit_code == 0
    project("a.py")
    assert gg("check").exit_code == 0


def test_findings_sorted_by_path_line_col(project):
    for name in ("b.py", "a.py", "sub/c.py"):
        project(name, "x = (\ny = (\n")
    lines = gg("check").stdout.splitlines()
    assert lines == sorted(lines, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))
    assert [line.split(":")[0] for line in lines] == ["a.py", "b.py", os.path.join("sub", "c.py")]


def test_paths_reported_relative_without_dot_prefix(project, tmp_path, monkeypatch):
    project("inner/a.py", SYNTAX_ERROR)
    assert gg("check", ".").stdout.startswith(os.path.join("inner", "a.py") + ":")
    assert gg("check", "./inner/a.py").stdout.startswith(os.path.join("inner", "a.py") + ":")
    monkeypatch.chdir(tmp_path / "inner")
    outside = project("other/b.py", SYNTAX_ERROR)
    shown = os.path.join("..", "other")
    assert gg("check", shown).stdout.startswith(os.path.join(shown, "b.py") + ":")
    assert gg("check", str(outside)).stdout.startswith(str(outside) + ":")


def test_show_source_puts_caret_under_column(project):
    project("a.py", "x = 1\nif x:\n\ty = (\n")
    lines = gg("check", "--show-source").stdout.splitlines()
    assert lines == ["a.py:3:6: GG001 syntax error: '(' was never closed", "\ty = (", "\t    ^"]


def test_json_format(project):
    project("a.py", SYNTAX_ERROR)
    result = gg("check", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == [{
        "path": "a.py", "line": 2, "col": 7, "end_line": 2, "end_col": 7, "code": "GG001",
        "name": "syntax-error", "message": "syntax error: invalid syntax", "fix": None}]
    project("a.py")
    assert json.loads(gg("check", "--format", "json").stdout) == []


def test_sarif_format(project):
    project("a.py", SYNTAX_ERROR)
    log = json.loads(gg("check", "--format", "sarif").stdout)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {"GG001", "GG101"} <= {rule["id"] for rule in rules}
    gg101 = next(rule for rule in rules if rule["id"] == "GG101")
    assert gg101["name"] == "leaf-inplace" and "## What it does" in gg101["help"]["markdown"]
    (result,) = run["results"]
    assert result["ruleId"] == "GG001" and rules[result["ruleIndex"]]["id"] == "GG001"
    location = result["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "a.py", "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": 2, "startColumn": 7, "endLine": 2,
                                   "endColumn": 7}}


@pytest.mark.parametrize("output_format", ["full", "github", "gitlab", "junit", "pylint"])
def test_every_format_from_the_command_line(project, output_format):
    project("train.py", GG101_SAMPLE)
    project("ok.py")
    result = gg("check", "--format", output_format)
    assert result.exit_code == 1 and result.stderr == (
        "1 finding in 1 file, 2 files checked\n[*] 1 fixable with `--fix`\n")
    out = result.stdout
    if output_format == "full":
        assert out.startswith("GG101 [*] in-place `*=` on leaf tensor `x`")  # a safe fix
        assert "3 + with torch.no_grad():\n4 +     x *= 100\n" in out
        assert "\n --> train.py:3:1\n  |\n" in out and "3 | x *= 100\n  | ^^^^^^^^\n" in out
    elif output_format == "github":
        assert out.startswith(f"::error title=gradguard (GG101),file="
                              f"{os.path.abspath('train.py').replace(':', '%3A')},line=3,col=1,"
                              "endLine=3,endColumn=9::in-place `*=` on leaf tensor `x`")
    elif output_format == "gitlab":
        (entry,) = json.loads(out)
        assert entry["check_name"] == "GG101" and entry["location"]["path"] == "train.py"
    elif output_format == "junit":
        import xml.etree.ElementTree as ET
        assert ET.fromstring(out).find("testsuite/testcase/failure") is not None
    else:
        assert out.startswith("train.py:3: [GG101] in-place `*=` on leaf tensor `x`")
    project("train.py")
    clean = gg("check", "--format", output_format)
    assert clean.exit_code == 0 and clean.stderr == "No findings, 2 files checked\n"


def test_full_shows_findings_in_imported_modules_with_their_source(project):
    project("pkg/__init__.py", "")
    project("pkg/model.py", "import torch\n\ndef scale(x):\n    x *= 2\n    return x\n")
    project("train.py", "import torch\nfrom pkg.model import scale\n"
                        "w = torch.ones(1, requires_grad=True)\nscale(w)\n")
    result = gg("check", "train.py", "--format", "full")  # only train.py is linted
    assert f" --> {os.path.join('pkg', 'model.py')}:4:5\n" in result.stdout
    assert "4 |     x *= 2\n  |     ^" in result.stdout


def test_sarif_format_is_valid_against_the_official_schema(project):
    from test_report_formats import validate

    project("a.py", SYNTAX_ERROR)
    project("train.py", GG101_SAMPLE)
    log = json.loads(gg("check", "--format", "sarif").stdout)
    validate(log)
    assert len(log["runs"][0]["results"]) == 2


def test_statistics(project):
    """As ruff's: the counts instead of the findings, a table or JSON (with its own
    fields); the formats other programs read are refused."""
    project("a.py", "x = (\n")
    project("b.py", "x = (\n")
    project("train.py", GG101_SAMPLE)
    text = gg("check", "--statistics")
    assert text.exit_code == 1
    assert text.stdout.splitlines() == ["2\tGG001\t[ ] syntax-error",
                                        "1\tGG101\t[*] leaf-inplace"]
    assert gg("check", "--statistics", "--format", "full").stdout == text.stdout
    machine = gg("check", "--statistics", "--format", "json")
    assert json.loads(machine.stdout) == [
        {"code": "GG001", "name": "syntax-error", "count": 2, "fixable": False,
         "fixable_count": 0},
        {"code": "GG101", "name": "leaf-inplace", "count": 1, "fixable": True,
         "fixable_count": 1}]
    for output_format in ("sarif", "github", "gitlab", "junit", "pylint"):
        result = gg("check", "--statistics", "--format", output_format)
        assert result.exit_code == 2 and "--statistics" in result.stderr


DATA_ASSIGN = "import torch\np = torch.nn.Parameter(torch.ones(2))\np.data = torch.zeros(2)\n"
DATA_MUL = "p.data.mul_(2)\n"  # GG302 with a safe fix (after DATA_ASSIGN, whose fix is unsafe)


@pytest.mark.parametrize("mode, applied", [("--diff", False), ("--fix", True)])
def test_fix_summaries_count_the_fixes_only_unsafe_fixes_apply(project, mode, applied):
    project("only.py", DATA_ASSIGN)
    project("both.py", DATA_ASSIGN + DATA_MUL)
    alone = gg("check", mode, "only.py")
    assert ("No findings fixed" if applied else "No findings would be fixed") \
        + " (1 fix available with `--unsafe-fixes`)." in alone.stderr
    both = gg("check", mode, "both.py")
    assert ("Fixed" if applied else "Would fix") \
        + " 1 finding in 1 file (1 more fix available with `--unsafe-fixes`)." in both.stderr
    project("both.py", DATA_ASSIGN + DATA_MUL)
    unsafe = gg("check", mode, "--unsafe-fixes", "both.py")
    assert f"{'Fixed' if applied else 'Would fix'} 2 findings in 1 file." in unsafe.stderr
    assert "available with" not in unsafe.stderr


# --- --output-file ------------------------------------------------------------------------


@pytest.mark.parametrize("output_format", ["text", "full", "json", "sarif", "github", "gitlab",
                                           "junit", "pylint"])
def test_output_file_holds_what_stdout_would(project, output_format):
    project("a.py", SYNTAX_ERROR)
    project("train.py", GG101_SAMPLE)
    shown = gg("check", "--format", output_format)
    written = gg("check", "--format", output_format, "--output-file", "reports/out.txt")
    assert written.exit_code == shown.exit_code == 1
    assert written.stdout == "" and written.stderr == shown.stderr == (
        "2 findings in 2 files, 2 files checked\n[*] 1 fixable with `--fix`\n")
    assert Path("reports/out.txt").read_text(encoding="utf-8") == shown.stdout
    assert os.listdir("reports") == ["out.txt"]  # no temporary file left behind


def test_output_file_statistics_and_quiet(project):
    project("a.py", SYNTAX_ERROR)
    text = gg("check", "-o", "out.txt", "--statistics", "-q")
    assert text.stdout == text.stderr == ""
    assert Path("out.txt").read_text().splitlines() == ["1\tGG001\t[ ] syntax-error"]
    machine = gg("check", "-o", "out.json", "--statistics", "--format", "json")
    assert [entry["code"] for entry in json.loads(Path("out.json").read_text())] == ["GG001"]
    assert machine.stdout == "" and "GG001" not in machine.stderr


def test_output_file_replaces_whole_and_keeps_the_mode(project):
    project("a.py")
    report = project("out.json", "x" * 10000)
    if os.name == "posix":
        report.chmod(0o640)
    assert gg("check", "--format", "json", "-o", "out.json").exit_code == 0
    assert report.read_text() == "[]\n"
    if os.name == "posix":
        assert report.stat().st_mode & 0o777 == 0o640
        fresh = Path("fresh.json")
        gg("check", "--format", "json", "-o", str(fresh))
        mask = os.umask(0)
        os.umask(mask)
        assert fresh.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_output_file_through_a_link(project, tmp_path):
    project("a.py", SYNTAX_ERROR)
    target = project("real/report.txt", "old\n")
    os.symlink(target, tmp_path / "link.txt")
    gg("check", "-o", "link.txt")
    assert os.path.islink(tmp_path / "link.txt") and target.read_text().startswith("a.py:2:7")


def test_output_file_failure_keeps_the_old_report(project, monkeypatch):
    project("a.py", SYNTAX_ERROR)
    project("out.txt", "old report\n")

    def fail(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    result = gg("check", "-o", "out.txt")
    assert result.exit_code == 2 and result.stdout == ""
    assert "out.txt: cannot write the report: No space left on device" in result.stderr
    assert "1 finding in 1 file" in result.stderr
    assert Path("out.txt").read_text() == "old report\n"
    assert sorted(os.listdir(".")) == ["a.py", "out.txt"]


def test_output_file_that_cannot_be(project):
    project("a.py", SYNTAX_ERROR)
    project("taken")
    result = gg("check", "-o", "taken/out.txt", "--exit-zero")
    assert result.exit_code == 2 and "taken/out.txt: cannot write the report" in result.stderr
    os.mkdir("dir")
    assert gg("check", "-o", "dir").exit_code == 2  # a directory: a usage error


def test_write_atomically_to_something_not_a_file():
    from gradguard.syntax.text import write_atomically

    write_atomically(os.devnull, "discarded\n")  # written as it is, not replaced
    assert os.path.exists(os.devnull) and not Path(os.devnull).is_file()


# --- Files --------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", DEFAULT_EXCLUDE)
def test_default_excludes(project, directory):
    project("ok.py")
    project(f"{directory}/bad.py", SYNTAX_ERROR)
    result = gg("check")
    assert result.exit_code == 0 and "1 file checked" in result.stderr


def test_named_files_are_always_linted(project):
    project(".venv/bad.py", SYNTAX_ERROR)
    project("build/lib/bad.py", SYNTAX_ERROR)
    project("script", SYNTAX_ERROR)  # no .py suffix
    result = gg("check", ".venv/bad.py", "build", "script")
    assert result.exit_code == 1 and codes(result) == ["GG001"] * 3


def test_exclude_globs_match_as_fnmatch_does():
    """The globs are joined into one expression: the same matches as fnmatch, one by one."""
    import fnmatch

    from gradguard.configuration.files import matches_any

    globs = ["build", "*.pyc", "test_?.py", "docs/*", "[ab]*.py", "a/**/c.py", "x[!0-9].py"]
    paths = ["build", "m.pyc", "test_1.py", "test_12.py", "docs/conf.py", "a.py", "c.py",
             "a/b/c.py", "a/c.py", "xz.py", "x1.py", "deep/docs/conf.py", "src/build"]
    root = os.path.abspath("root")
    for relative in paths:
        path = os.path.join(root, relative)
        candidates = [os.path.basename(relative), relative]
        for glob in globs:
            assert matches_any(path, [glob], [root]) == any(
                fnmatch.fnmatch(candidate, glob) for candidate in candidates), (relative, glob)
        assert matches_any(path, globs, [root]) == any(
            fnmatch.fnmatch(candidate, glob) for candidate in candidates for glob in globs)
    assert not matches_any(os.path.join(root, "a.py"), [], [root])


def test_force_exclude_applies_to_named_files(project):
    project("build/bad.py", SYNTAX_ERROR)
    result = gg("check", "--force-exclude", "build/bad.py")
    assert result.exit_code == 0 and "0 files checked" in result.stderr


def test_exclude_replaces_and_extend_exclude_adds(project):
    project("build/bad.py", SYNTAX_ERROR)
    project("gen/schema_pb2.py", SYNTAX_ERROR)
    project("pkg/generated/x.py", SYNTAX_ERROR)
    project("pkg/ok.py")
    assert gg("check").exit_code == 1  # gen/ and pkg/generated/ are not excluded by default
    result = gg("check", "--extend-exclude", "*_pb2.py", "--extend-exclude", "pkg/generated")
    assert result.exit_code == 0 and "1 file checked" in result.stderr
    result = gg("check", "--exclude", "gen,generated")  # build/ no longer excluded
    assert codes(result) == ["GG001"] and "build" in result.stdout


def test_reached_agrees_with_walking_the_root(project, tmp_path):
    """What an editor's server asks of an open file: would ``check ROOT`` lint it."""
    finder = settings.make_plan(cli.check_options(["--extend-exclude", "pkg/generated"]),
                           configuration.Config(), cwd=tmp_path)[1]
    root = str(tmp_path)
    assert finder.reached(str(tmp_path / "pkg" / "ok.py"), root)
    assert not finder.reached(str(tmp_path / ".venv" / "lib" / "x.py"), root)
    assert not finder.reached(str(tmp_path / "pkg" / "generated" / "x.py"), root)
    # a file outside the root is judged by its own name: its parents are not the project's
    outside = tmp_path.parent / "build-elsewhere" / "x.py"
    assert finder.reached(str(outside), root)


def test_check_options_are_the_commands_defaults():
    options = cli.check_options()
    assert options.select == () and options.output_format == "text"
    assert cli.check_options(["--select", "GG1"]).select == ("GG1",)


def test_the_options_defaults_are_the_command_lines(monkeypatch):
    """The language server and the flake8 plugin lint with ``CheckOptions()``: its
    defaults must be those ``check`` runs with (where the environment says nothing)."""
    monkeypatch.delenv("GRADGUARD_NO_CACHE", raising=False)
    monkeypatch.delenv(cache_module.ENVIRONMENT, raising=False)
    assert cli.check_options() == CheckOptions()
    assert cli.check_options(["--extend-select", "GG9", "-j", "3"]) == CheckOptions(
        extend_select=("GG9",), jobs=3)


def test_only_python_files_are_discovered(project):
    project("notes.txt", SYNTAX_ERROR)
    project("stub.pyi", SYNTAX_ERROR)
    project("a.py")
    assert "1 file checked" in gg("check").stderr


def test_duplicate_paths_linted_once(project):
    project("a.py", SYNTAX_ERROR)
    result = gg("check", ".", "a.py", "./a.py")
    assert len(result.stdout.splitlines()) == 1 and "1 file checked" in result.stderr


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_loops_terminate(project, tmp_path):
    project("pkg/a.py", SYNTAX_ERROR)
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    os.symlink(tmp_path, tmp_path / "pkg" / "up")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    result = gg("check")
    assert result.exit_code == 1 and len(result.stdout.splitlines()) == 1


def test_missing_path_is_error_after_linting_the_rest(project):
    project("a.py", SYNTAX_ERROR)
    result = gg("check", "nope.py", "a.py")
    assert result.exit_code == 2
    assert codes(result) == ["GG001"]
    assert "nope.py" in result.stderr and "1 file checked" in result.stderr
    assert gg("check", "--exit-zero", "nope.py").exit_code == 2


def test_unreadable_file_is_error_after_linting_the_rest(project, monkeypatch):
    project("a.py", SYNTAX_ERROR)
    project("b.py")
    real_read = linting.read_file

    def fake_read(path):
        if str(path).endswith("b.py"):
            raise PermissionError(13, "Permission denied", path)
        return real_read(path)

    monkeypatch.setattr(linting, "read_file", fake_read)
    result = gg("check")
    assert result.exit_code == 2 and codes(result) == ["GG001"]
    assert "b.py: Permission denied" in result.stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file_by_permissions(project):
    project("b.py").chmod(0)
    result = gg("check")
    assert result.exit_code == 2 and "Permission denied" in result.stderr


def deny_search(monkeypatch, directory: str) -> None:
    """``os.stat`` of anything under ``directory`` fails as it does for a user who may
    not search it (mode 000): the sessions run as root, whom no mode stops."""
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if os.path.abspath(path).startswith(os.path.abspath(directory) + os.sep):
            raise PermissionError(13, "Permission denied", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)


@pytest.mark.parametrize("args", [(), ("--show-settings",)])
def test_a_file_in_a_directory_that_cannot_be_searched_is_a_permission_error(
        project, monkeypatch, args):
    project("secret/x.py", SYNTAX_ERROR)
    deny_search(monkeypatch, "secret")
    result = gg("check", *args, os.path.join("secret", "x.py"))
    assert result.exit_code == 2
    assert f"{os.path.join('secret', 'x.py')}: Permission denied" in result.stderr
    assert "no such file" not in result.stderr
    assert "no such file or directory" in gg("check", *args, "nope.py").stderr


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_a_file_in_a_directory_that_cannot_be_searched_by_permissions(project, tmp_path):
    project("secret/x.py", SYNTAX_ERROR)
    (tmp_path / "secret").chmod(0)
    try:
        result = gg("check", "secret/x.py")
    finally:
        (tmp_path / "secret").chmod(0o755)
    assert result.exit_code == 2 and "secret/x.py: Permission denied" in result.stderr


# --- Standard input -----------------------------------------------------------------------


def test_stdin_default_name(project):
    result = gg("check", "-", stdin=b"x = (\n")
    assert result.stdout.startswith("stdin:1:5: GG001")
    assert "1 file checked" in result.stderr


def test_stdin_filename_with_other_paths(project):
    project("a.py", SYNTAX_ERROR)
    result = gg("check", "-", "a.py", "--stdin-filename", "build/x.py", stdin=b"x = (\n")
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        "a.py", os.path.join("build", "x.py")]  # sorted, and never excluded


def test_stdin_subject_to_per_file_ignores(project):
    project("pyproject.toml", '[tool.gradguard.per-file-ignores]\n"x.py" = ["GG302"]\n')
    source = DATA_WRITE.encode()
    assert gg("check", "-", "--stdin-filename", "x.py", stdin=source).exit_code == 0
    assert gg("check", "-", "--stdin-filename", "y.py", stdin=source).exit_code == 1


# --- Selection ----------------------------------------------------------------------------


@pytest.mark.parametrize("args, reported", [
    ((), True),
    (("--ignore", "GG302"), False),
    (("--ignore", "GG3"), False),
    (("--ignore", "gg"), False),
    (("--ignore", "ALL"), False),
    (("--select", "GG1"), False),
    (("--select", "GG101,GG302"), True),
    (("--select", "GG101", "--select", "GG302"), True),
    (("--select", "GG1", "--extend-select", "GG302"), True),
    (("--select", "ALL"), True),
    (("--select", "GG", "--ignore", "GG302"), False),
    (("--select", "GG302", "--ignore", "GG3"), True),  # the more specific wins
    (("--select", "GG3", "--ignore", "GG3"), False),  # ignore wins a tie
])
def test_select_and_ignore(project, args, reported):
    project("a.py", DATA_WRITE)
    result = gg("check", *args)
    assert result.exit_code == (1 if reported else 0), result.stderr


@pytest.mark.parametrize("args", [
    (), ("--select", "GG101"), ("--select", "GG3"), ("--ignore", "GG001"), ("--ignore", "GG0"),
    ("--ignore", "ALL"), ("--select", "GG1", "--ignore", "GG00"),
])
def test_diagnostics_are_reported_whatever_the_selection(project, args):
    """As ruff reports a syntax error whatever is selected: a file that was not linted
    (GG001 syntax, GG002 decoding) never passes silently."""
    project("a.py", SYNTAX_ERROR)
    project("b.py", b"x = '\xff'\n")
    project("pyproject.toml", '[tool.gradguard.per-file-ignores]\n"*.py" = ["GG0"]\n')
    result = gg("check", *args)
    assert result.exit_code == 1 and codes(result) == ["GG001", "GG002"], result.stderr


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_is_usage_error(project, option):
    result = gg("check", option, "GG99")
    assert result.exit_code == 2 and "GG99" in result.stderr and "unknown" in result.stderr


def test_resolve_default_and_prefixes():
    diagnostics = {"GG001", "GG002", "GG003"}  # always selected
    assert resolve(None) == default_codes()
    assert diagnostics | {"GG101"} <= resolve(None)
    assert resolve(["GG1"]) == diagnostics | {c for c in known_codes() if c.startswith("GG1")}
    assert resolve(["ALL"]) == set(known_codes())
    assert resolve(None, ["GG1"]) == {c for c in default_codes() if not c.startswith("GG1")}
    assert resolve(None, ["GG"], ["GG101"]) == diagnostics | {"GG101"}
    assert resolve(["GG101"], ["GG1"]) == diagnostics | {"GG101"}
    assert resolve(["GG1"], ["GG101"]) == resolve(["GG1"]) - {"GG101"}
    assert resolve(None, ["ALL"]) == diagnostics


def test_select_enables_default_off_rule():
    known = ("GG001", "GG101", "GG150")
    defaults = frozenset({"GG001", "GG101"})
    assert resolve(None, known=known, defaults=defaults) == defaults
    assert resolve(None, extend_select=["GG150"], known=known, defaults=defaults) == set(known)
    assert resolve(["GG1"], known=known, defaults=defaults) == {"GG001", "GG101", "GG150"}


def test_parse_and_validate_selectors():
    assert parse_selectors(["gg1, GG002", "GG003"]) == ["GG1", "GG002", "GG003"]
    validate(["GG", "GG1", "GG101", "ALL"], known_codes())
    with pytest.raises(UnknownSelector, match="'GG99'"):
        validate(["GG1", "GG99"], known_codes())
    assert split_globs(["a, b", "./c/", ""]) == ["a", "b", "c"]


# --- noqa ---------------------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    ("x = 1", None),
    ("x = 1  # noqa", BLANKET),
    ("x = 1  #noqa", BLANKET),
    ("x = 1  # NOQA", BLANKET),
    ("x = 1  # noqa: GG101", {"GG101"}),
    ("x = 1  # noqa:GG101,GG102", {"GG101", "GG102"}),
    ("x = 1  # noqa: gg1, GG002", {"GG1", "GG002"}),
    ("x = 1  # noqa: this is why", BLANKET),  # flake8: no codes, so blanket
])
def test_noqa_codes(line, expected):
    assert noqa_codes(line) == expected


def test_filter_noqa_only_on_the_reported_line():
    lines = ["a  # noqa: GG1", "b  # noqa", "c  # noqa: GG102", "d"]
    found = [Finding("p", line, 1, "GG101", "m") for line in (1, 2, 3, 4, 9)]
    assert [f.line for f in filter_noqa(found, lines)] == [3, 4, 9]


def test_source_lines_decoding():
    assert source_lines(b"a\r\nb\rc\n") == ["a", "b", "c", ""]
    assert source_lines(b"\xef\xbb\xbfa\x0cb\n") == ["a\x0cb", ""]
    assert source_lines(b"# coding: latin-1\nx = '\xe9'\n")[1] == "x = 'é'"
    assert source_lines(b"x = '\xff'  # noqa\n")[0] == "x = 'ÿ'  # noqa"  # latin-1 fallback


@pytest.mark.parametrize("comment, suppressed", [
    ("# noqa", True), ("# noqa: GG302", True), ("# noqa:GG3", True), ("# NoQA: gg302", True),
    ("# noqa: GG101", False), ("", False),
])
def test_noqa_in_cli(project, comment, suppressed):
    project("a.py", f"{DATA_WRITE.rstrip()}  {comment}\n")
    assert gg("check").exit_code == (0 if suppressed else 1)
    assert gg("check", "--disable-noqa").exit_code == 1


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: GG001", "# noqa: GG0"])
def test_noqa_does_not_hide_a_file_that_was_not_linted(project, comment):
    project("a.py", f"x = (  {comment}\n")
    project("b.py", f"x = '\xff'  {comment.replace('GG001', 'GG002')}\n".encode("latin-1"))
    assert codes(gg("check")) == ["GG001", "GG002"]


# --- Configuration ------------------------------------------------------------------------


def test_config_found_walking_up(project, tmp_path, monkeypatch):
    project("pyproject.toml", '[tool.gradguard]\nignore = ["GG302"]\n')
    project("sub/pyproject.toml", "[project]\nname = 'sub'\n")  # no section: skipped
    project("sub/a.py", DATA_WRITE)
    monkeypatch.chdir(tmp_path / "sub")
    assert gg("check").exit_code == 0
    assert gg("check", "--isolated").exit_code == 1
    assert gg("check", "--ignore", "GG301").exit_code == 1  # command line replaces ignore


def test_config_select_extend_select_and_exclude(project):
    project("pyproject.toml", '[tool.gradguard]\nselect = ["GG1"]\nexclude = ["skip"]\n'
                              'extend-exclude = ["also"]\n')
    project("a.py", DATA_WRITE)
    project("skip/b.py", SYNTAX_ERROR)
    project("also/c.py", SYNTAX_ERROR)
    assert gg("check").exit_code == 0
    result = gg("check", "--extend-select", "GG302")
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["a.py"]
    assert gg("check", "--select", "GG3").exit_code == 1
    assert len(gg("check", "--isolated").stdout.splitlines()) == 3


def test_config_per_file_ignores(project):
    project("pyproject.toml", '[tool.gradguard.per-file-ignores]\n"tests/*" = ["GG3"]\n'
                              '"legacy.py" = ["GG302"]\n')
    project("tests/t.py", DATA_WRITE)
    project("pkg/legacy.py", DATA_WRITE)
    project("a.py", DATA_WRITE)
    assert [line.split(":")[0] for line in gg("check").stdout.splitlines()] == ["a.py"]


def test_config_file_option(project):
    project("gradguard.toml", 'ignore = ["GG302"]\n')
    project("a.py", DATA_WRITE)
    assert gg("check", "--config", "gradguard.toml").exit_code == 0
    assert gg("check", "--config", "gradguard.toml", "--isolated").exit_code == 2


@pytest.mark.parametrize("content, message", [
    ('[tool.gradguard]\nselcet = ["GG1"]\n', "selcet"),
    ('[tool.gradguard]\nselect = ["GG99"]\n', "GG99"),
    ('[tool.gradguard]\nselect = 1\n', "list of strings"),
    ('[tool.gradguard]\nselect = [\n', "invalid TOML"),
    ('[tool.gradguard.per-file-ignores]\n"x" = ["XX"]\n', "XX"),
])
def test_bad_config_is_usage_error(project, content, message):
    project("pyproject.toml", content)
    result = gg("check")
    assert result.exit_code == 2 and message in result.stderr


def test_config_without_toml_reader_warns_and_continues(project, monkeypatch):
    monkeypatch.setattr(configuration, "tomllib", None)
    project("pyproject.toml", '[tool.gradguard]\nignore = ["GG302"]\n')
    project("a.py", DATA_WRITE)
    result = gg("check")
    assert result.exit_code == 1 and "warning" in result.stderr and "tomli" in result.stderr


# --- Errors, debug, jobs ------------------------------------------------------------------


def test_exception_in_check_source_is_gg003_for_that_file(project, monkeypatch):
    project("a.py")
    project("b.py", SYNTAX_ERROR)
    from gradguard.analysis import checker

    real = checker.check_source

    def flaky(source, path, *args, **kwargs):
        if path == "a.py":
            raise RuntimeError("boom")
        return real(source, path, *args, **kwargs)

    monkeypatch.setattr(checker, "check_source", flaky)
    result = gg("check")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "a.py:1:1: GG003 internal error: RuntimeError: boom"
    assert codes(result) == ["GG003", "GG001"]
    assert "Traceback" in gg("check", "--debug").stdout
    assert gg("check", "--ignore", "GG003").stdout.count("GG003") == 1  # never hidden


def test_internal_error_in_runner(project, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("runner bug")

    monkeypatch.setattr(files.FileFinder, "discover", broken)
    result = gg("check")
    assert result.exit_code == 2 and result.stdout == ""
    assert "internal error: RuntimeError: runner bug" in result.stderr
    assert "Traceback" not in result.stderr
    assert "Traceback" in gg("check", "--debug").stderr


def test_debug_is_passed_to_check_source(project, monkeypatch):
    seen = []
    monkeypatch.setattr("gradguard.analysis.checker.check_source",
                        lambda s, p, r, debug, *_, **__: seen.append(debug) or [])
    project("a.py")
    gg("check")
    gg("check", "--debug")
    assert seen == [False, True]


@pytest.mark.parametrize("files, text, quota", [
    ({"cpu.max": "max 100000\n"}, None, None),
    ({"cpu.max": "150000 100000\n"}, None, 2),
    ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, None, 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None, None),
    ({}, None, None),
])
def test_the_cgroup_quota_caps_the_processes(tmp_path, files, text, quota):
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    assert linting._cgroup_quota(str(tmp_path)) == quota
    assert 1 <= linting.usable_cpus()


def test_a_small_run_stays_in_one_process_and_a_large_one_does_not(tmp_path, monkeypatch):
    pools = []

    class Pool(linting.ProcessPoolExecutor):
        def __init__(self, max_workers):
            pools.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(linting, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(linting, "usable_cpus", lambda: 2)
    plan, _ = settings.make_plan(cli.check_options(), settings.load_config(None, True))
    paths = []
    for n in range(linting.SMALL_RUN_FILES):
        paths.append(str(tmp_path / f"f{n}.py"))
        Path(paths[-1]).write_text("import torch\n" + "x = 1\n" * 6000)
    assert [o.path for o in linting.lint_all(paths[:3], plan, None)] == paths[:3] and pools == []
    assert [o.path for o in linting.lint_all(paths, plan, None)] == paths and pools == [2]
    linting.lint_all(paths[:3], plan, 2)  # asked for: a pool even for a small run
    assert pools == [2, 2]


def test_a_large_file_is_linted_in_a_process_of_its_own(tmp_path, monkeypatch):
    """Unless it is the run's only file: a process that held a tree of a quarter of the
    memory budget stays large for the files after."""
    plan, _ = settings.make_plan(cli.check_options(), settings.load_config(None, True))
    paths = [str(tmp_path / name) for name in ("a.py", "big.py", "c.py")]
    for path in paths:
        Path(path).write_text("import torch\nw = torch.ones(3, requires_grad=True)\nw += 1\n"
                              + ("x = 1\n" * 2000 if "big" in path else ""))
    expected = [linting.lint_path(path, plan) for path in paths]
    apart = []
    monkeypatch.setattr(linting, "lint_path_apart", lambda path, *rest: apart.append(path)
                        or linting.lint_path(path, *rest))
    monkeypatch.setattr(memory, "BUDGET", Path(paths[1]).stat().st_size * 600 * 4)
    assert linting.lint_all(paths, plan, 1) == expected and apart == [paths[1]]
    assert linting.lint_all(paths[1:2], plan, 1) == expected[1:2] and apart == [paths[1]]


def test_a_file_linted_apart_gives_what_it_gives_here(tmp_path):
    plan, _ = settings.make_plan(cli.check_options(), settings.load_config(None, True))
    path = tmp_path / "leaf.py"
    path.write_text("import torch\nw = torch.ones(3, requires_grad=True)\nw += 1\n")
    outcome = linting.lint_path_apart(str(path), plan, None)  # a spawned process
    assert outcome == linting.lint_path(str(path), plan) and outcome.findings[0].code == "GG101"


def test_a_process_that_dies_gives_an_internal_error(tmp_path, monkeypatch):
    class Dying(linting.ProcessPoolExecutor):
        def submit(self, *args, **kwargs):
            future = Future()
            future.set_exception(BrokenProcessPool("killed"))
            return future

    monkeypatch.setattr(linting, "ProcessPoolExecutor", Dying)
    plan, _ = settings.make_plan(cli.check_options(), settings.load_config(None, True))
    [finding] = linting.lint_path_apart(str(tmp_path / "big.py"), plan, None).findings
    assert finding.code == "GG003" and "ended abruptly" in finding.message


def test_where_no_process_starts_a_large_file_is_linted_here(tmp_path, monkeypatch):
    class Refused(linting.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            raise PermissionError("no semaphores in this sandbox")

    monkeypatch.setattr(linting, "ProcessPoolExecutor", Refused)
    plan, _ = settings.make_plan(cli.check_options(), settings.load_config(None, True))
    path = tmp_path / "big.py"
    path.write_text("import torch\nw = torch.ones(3, requires_grad=True)\nw += 1\n")
    assert linting.lint_path_apart(str(path), plan, None) == linting.lint_path(str(path), plan)


def test_jobs_give_the_same_output(project):
    for i in range(12):
        project(f"m{i:02}.py", SYNTAX_ERROR if i % 3 else "x = 1\n")
    serial = gg("check")
    parallel = gg("check", "--jobs", "3")
    assert parallel.stdout == serial.stdout and parallel.exit_code == serial.exit_code == 1
    assert parallel.stderr == serial.stderr


def test_subprocess_streams(project):
    project("a.py", SYNTAX_ERROR)
    run = subprocess.run([sys.executable, "-m", "gradguard", "check"], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert run.stdout == "a.py:2:7: GG001 syntax error: invalid syntax\n"
    assert run.stderr == "1 finding in 1 file, 1 file checked\n"


# --- Real findings (need the engine) ------------------------------------------------------


def test_gg101_reported(project):
    project("train.py", GG101_SAMPLE)
    result = gg("check")
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:3:1: GG101 ")


@pytest.mark.parametrize("args, comment, reported", [
    ((), "", True),
    ((), "  # noqa: GG101", False),
    ((), "  # noqa: GG1", False),
    ((), "  # noqa: GG102", True),
    (("--ignore", "GG1"), "", False),
    (("--select", "GG101"), "", True),
    (("--disable-noqa",), "  # noqa", True),
])
def test_gg101_selection_and_noqa(project, args, comment, reported):
    project("train.py", GG101_SAMPLE.replace("x *= 100", "x *= 100" + comment))
    assert ("GG101" in codes(gg("check", *args))) == reported


def test_syntax_error_and_leaf_inplace_in_one_directory(project):
    """The issue's check: GG001 on the broken file, GG101 on the other, exit 1."""
    project("pkg/broken.py", "def f(:\n    pass\n")
    project("pkg/train.py", GG101_SAMPLE)
    result = gg("check", "pkg")
    assert result.exit_code == 1
    broken, train = result.stdout.splitlines()
    assert broken.startswith(os.path.join("pkg", "broken.py") + ":1:7: GG001 ")
    assert train.startswith(os.path.join("pkg", "train.py") + ":3:1: GG101 ")
