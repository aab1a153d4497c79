"""The whole-ecosystem run (``bench/bench_ecosystem.py``): what fails a package, and a run
over a made-up site-packages. ``python -m pytest -m slow`` also runs it over part of the
installed packages (torch's, transformers' when installed), as the full run does."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from gradguard.domain.findings import DECODE_ERROR, INTERNAL_ERROR, SYNTAX_ERROR

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_ecosystem",
                                               ROOT / "bench" / "bench_ecosystem.py")
ecosystem = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ecosystem  # dataclasses look their module up by name
_spec.loader.exec_module(ecosystem)


def finished(**changes) -> "ecosystem.PackageRun":
    """A package run that exited 0 having checked its 3 files, with ``changes``."""
    return ecosystem.PackageRun(**{"name": "pkg", "files": 3, "lines": 30, "exit_code": 0,
                                   "checked": 3, **changes})


@pytest.mark.parametrize("run, problems", [
    (finished(), []),
    (finished(codes={SYNTAX_ERROR: 2, DECODE_ERROR: 1, "GG101": 4}), []),
    (finished(internal_errors=["a.py: internal error in the engine"],
              codes={INTERNAL_ERROR: 1}), [f"1 {INTERNAL_ERROR}"]),
    (finished(exit_code=2, checked=2), ["exit status 2"]),
    (finished(traceback=True), ["a traceback on stderr"]),
    (finished(exit_code=None, checked=None, seconds=60.0), ["killed after 60 s"]),
    (finished(checked=2), ["2 of 3 files checked"]),
    (finished(checked=None), ["no summary on stderr"]),
    (finished(bad_output="stdout is not JSON"), ["stdout is not JSON"]),
])
def test_what_fails_a_package(run, problems):
    assert run.problems() == problems


def test_findings_are_counted_and_internal_errors_kept():
    run = finished()
    ecosystem.read_findings(run, json.dumps([
        {"path": "a.py", "code": SYNTAX_ERROR, "message": "syntax error: x"},
        {"path": "b.py", "code": INTERNAL_ERROR, "message": "internal error in GG101\nTrace"},
        {"path": "b.py", "code": "GG302", "message": "m"},
        {"path": "c.py", "code": "GG302", "message": "m"},
    ]))
    assert run.codes == {SYNTAX_ERROR: 1, INTERNAL_ERROR: 1, "GG302": 2}
    assert run.internal_errors == ["b.py: internal error in GG101\nTrace"]


def test_a_made_up_site(tmp_path, capsys):
    """Packages and top-level modules are linted one by one; metadata and caches are not
    packages; a Python 2 file is a GG001, counted but not a failure."""
    site = tmp_path / "site-packages"
    for name, text in {
        "good/__init__.py": "import torch\nw = torch.zeros(3, requires_grad=True)\n",
        "good/legacy.py": "print 'hello'\n",
        "good/sub/__init__.py": "x = 1\n",
        "single.py": "import torch\nv = torch.autograd.Variable(torch.zeros(2))\n",
        "good-1.0.dist-info/METADATA": "Name: good\n",
        "__pycache__/single.cpython-311.pyc": "",
        "data_only/table.json": "{}",
    }.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    out = tmp_path / "out.json"

    assert ecosystem.main(["--site", str(site), "--jobs", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [(p["name"], p["files"], p["lines"]) for p in report["packages"]] == [
        ("good", 3, 4), ("single", 1, 2)]
    assert report["totals"]["codes"] == {SYNTAX_ERROR: 1, "GG308": 1}
    assert report["totals"]["failed"] == []
    assert "legacy.py" not in capsys.readouterr().out  # GG001 is a count, not a failure

    assert ecosystem.main(["--site", str(site), "--packages", "good.sub"]) == 0
    assert "good.sub" in capsys.readouterr().out


@pytest.mark.slow
def test_installed_packages_lint_without_a_crash(tmp_path):
    """A bounded part of the full run (a minute at most): torch's layers, optimizers,
    autograd, distributions and data loading, click (a dependency), and four
    transformers models when transformers is installed."""
    packages = ["torch.nn", "torch.optim", "torch.autograd", "torch.distributions",
                "torch.utils.data", "click"]
    if importlib.util.find_spec("transformers") is not None:
        packages += [f"transformers.models.{name}" for name in ("bert", "gpt2", "llama", "t5")]
    out = tmp_path / "out.json"
    status = ecosystem.main(["--packages", *packages, "--json", str(out)])
    totals = json.loads(out.read_text())["totals"]
    assert totals["failed"] == [] and status == 0
    assert totals["files"] > 100 and INTERNAL_ERROR not in totals["codes"]
