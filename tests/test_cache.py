"""The content cache: a warm run gives what a cold one gives, without linting again; a
changed file sends back to the linter itself and the files whose results read it."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import gg as run_gradguard
from click.testing import CliRunner

from gradguard.frontends import cli
from gradguard.runs import cache as cache_module
from gradguard.runs import linting

MODEL = "import torch\n\n\ndef scale(x):\n    x *= 2\n    return x\n"
TRAIN = ("import torch\nfrom model import scale\n\nw = torch.ones(2, requires_grad=True)\n"
         "scale(w)\n")
OTHER = "import torch\n\nv = torch.zeros(2, requires_grad=True)\nv.mul_(2)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose runs use the cache (the tests' default is off), counting the
    files the linter really lints."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADGUARD_NO_CACHE", raising=False)
    monkeypatch.delenv(cache_module.ENVIRONMENT, raising=False)
    for name, text in (("model.py", MODEL), ("train.py", TRAIN), ("other.py", OTHER)):
        (tmp_path / name).write_text(text)
    linted = []
    real = linting.lint_source

    def counting(path, source, plan):
        linted.append(path)
        return real(path, source, plan)

    monkeypatch.setattr(linting, "lint_source", counting)
    return tmp_path, linted


def gg(*args: str):
    """``gradguard check --jobs 1 ARGS...`` in this process."""
    return run_gradguard("check", "--jobs", "1", *args)


def test_a_warm_run_lints_nothing_and_says_the_same(project):
    root, linted = project
    cold = gg("--format", "json")
    assert sorted(linted) == ["model.py", "other.py", "train.py"]
    linted.clear()
    warm = gg("--format", "json")
    assert linted == [] and warm.stdout == cold.stdout and warm.exit_code == cold.exit_code == 1
    found = json.loads(warm.stdout)
    assert {(f["path"], f["code"]) for f in found} == {("model.py", "GG101"), ("other.py", "GG101")}
    assert next(f for f in found if f["path"] == "other.py")["fix"]  # fixes come back too
    assert (root / ".gradguard_cache" / "CACHEDIR.TAG").read_text().startswith("Signature: ")
    assert (root / ".gradguard_cache" / ".gitignore").read_text().endswith("*\n")


def test_a_changed_module_sends_back_its_importers_only(project):
    root, linted = project
    gg()
    linted.clear()
    (root / "model.py").write_text(MODEL.replace("x *= 2", "x = x * 2"))
    result = gg()
    assert sorted(linted) == ["model.py", "train.py"]  # other.py did not read model.py
    assert "model.py" not in result.stdout and "other.py" in result.stdout


def test_a_touch_without_a_change_keeps_the_results(project):
    root, linted = project
    gg()
    linted.clear()
    os.utime(root / "model.py", ns=(1, 1))
    gg()
    assert linted == []


def test_what_decides_the_findings_is_in_the_key(project):
    root, linted = project
    gg()
    linted.clear()
    gg("--select", "GG1")  # another selection: another result
    assert sorted(linted) == ["model.py", "other.py", "train.py"]
    linted.clear()
    gg("--show-source")  # only how they are shown: the same results
    assert linted == []


def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(project):
    root, linted = project
    cold = gg()
    entries = sorted((root / ".gradguard_cache").rglob("*.json"))
    assert len(entries) == 3
    entries[0].write_text("{not json")
    entries[1].write_text(json.dumps({"key": "another", "reads": [], "findings": []}))
    linted.clear()
    assert gg().stdout == cold.stdout and len(linted) == 2
    linted.clear()
    gg()
    assert linted == []  # rewritten


def test_no_cache_cache_dir_and_clean(project, tmp_path_factory):
    root, linted = project
    gg("--no-cache")
    assert not (root / ".gradguard_cache").exists()
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "cache"
    gg("--cache-dir", str(elsewhere))
    assert (elsewhere / "CACHEDIR.TAG").is_file()
    runner = CliRunner()
    assert "removed" in runner.invoke(cli.main, ["clean", "--cache-dir", str(elsewhere)]).stderr
    assert not elsewhere.exists()
    (root / "notes").mkdir()
    result = runner.invoke(cli.main, ["clean", "--cache-dir", str(root / "notes")])
    assert "no cache at" in result.stderr and (root / "notes").is_dir()  # not one of ours


def test_the_environment_names_the_cache(project, monkeypatch, tmp_path_factory):
    root, _ = project
    directory = tmp_path_factory.mktemp("env") / "c"
    monkeypatch.setenv(cache_module.ENVIRONMENT, str(directory))
    gg()
    assert (directory / "CACHEDIR.TAG").is_file() and not (root / ".gradguard_cache").exists()


def test_parallel_runs_fill_and_use_the_cache(project):
    root, linted = project
    for n in range(linting.SMALL_RUN_FILES):
        (root / f"extra{n}.py").write_text(OTHER + "x = 1\n" * 6000)
    cold = run_gradguard("check", "--jobs", "2")
    linted.clear()
    warm = gg()
    assert linted == [] and warm.stdout == cold.stdout


def test_an_unwritable_cache_is_a_slower_run_not_a_failure(project):
    root, _ = project
    (root / "blocked").write_text("a file where the cache directory would be\n")
    result = gg("--cache-dir", str(root / "blocked" / "cache"))
    assert result.exit_code == 1 and "GG101" in result.stdout


def test_the_key_is_the_same_in_every_process(project):
    """A set's order changes with the hash seed: the plan's fingerprint must not."""
    import subprocess
    import sys

    script = ("from gradguard.frontends import cli; from gradguard.runs import settings; "
              "plan, _ = settings.make_plan("
              "cli.check_options(['--select', 'ALL']), settings.load_config(None, True)); "
              "print(plan.fingerprint().hex())")
    prints = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout
              for seed in ("1", "2", "3")}
    assert len(prints) == 1 and prints != {""}


def test_nested_recordings_keep_their_own_reads():
    """An import analysed while a file is linted records into both; equal sets must not
    be mistaken for one another when they close."""
    from gradguard.syntax.reads import note_read, recording_reads

    with recording_reads() as outer:
        with recording_reads() as inner:
            note_read("a.py")
        assert inner == outer == {"a.py"}
        with recording_reads() as second:
            note_read("b.py")
        note_read("c.py")
    assert outer == {"a.py", "b.py", "c.py"} and second == {"b.py"} and inner == {"a.py"}
