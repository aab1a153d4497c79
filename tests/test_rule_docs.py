"""Rules as documentation: every rule's docstring has ruff's sections in order; its
*Example* is a complete program that gradguard flags with the rule (and torch shows the
error, or the warning, the rule is about); its *Use instead* is one that gradguard does not
flag and that runs clean; and docs/rules.md is what tools/gen_rules_doc.py writes."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from oracle import EXPECTATIONS
from torch_runner import TorchRunner

from gradguard.configuration.selection import known_codes
from gradguard.reporting import ruledoc
from gradguard.rules import ALL_RULES
from gradguard.rules.base import FIXABILITY
from gradguard.runs import linting

ROOT = Path(__file__).resolve().parent.parent
RULES = {info.code: info for info in ruledoc.rules()}
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="running the examples needs torch")

# What torch does with each rule's Example, as the oracle proves the rule's fixtures
# (tests/oracle.py ``EXPECTATIONS``): (stderr text, whether the error or warning is at the
# flagged line). A rule about an error raises it; a rule about a warning warns; a silent
# rule (a wrong gradient, a changed value, a term that trains nothing) runs clean.
RAISES = {code: (exp.contains, exp.mode == "raises_here") for code, exp in EXPECTATIONS.items()
          if exp.mode in ("raises_here", "raises_later")}
WARNS = {code: exp.contains for code, exp in EXPECTATIONS.items() if exp.mode == "warns_here"}
# A silent rule whose flagged line torch warns about, though the warning does not say that a
# gradient is lost (the oracle proves that: no_gradient)
WARNS["GG310"] = "Converting a tensor with requires_grad=True to a scalar"


def _blocks(code: str, title: str) -> list[str]:
    return ruledoc.code_blocks(dict(ruledoc.sections(RULES[code].doc))[title])


def _findings(source: str, path: str) -> list[tuple[str, int]]:
    """What ``check --select ALL`` reports: every rule, ``noqa`` applied (and GG900, which
    judges the ``noqa`` comments)."""
    plan = linting.Plan(codes=frozenset(known_codes()), rules=ALL_RULES, per_file_ignores=(),
                    roots=())
    return sorted((f.code, f.line) for f in linting.lint_source(path, source, plan).findings)


@pytest.mark.parametrize("code", RULES)
def test_docstring_has_every_section_in_order(code):
    doc = RULES[code].doc
    assert doc.startswith("## What it does\n")
    found = ruledoc.sections(doc)
    assert [title for title, _ in found] == list(ruledoc.SECTIONS)
    assert all(body.strip() for _, body in found), "an empty section"
    assert _blocks(code, "Example") and _blocks(code, "Use instead")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_declares_fixability(rule):
    assert rule.fixable in FIXABILITY


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_rule_is_a_hazard_that_says_what_torch_shows_or_an_advisory(rule):
    """Issue 28: a hazard says what torch shows where it is right (an error at a line, a
    gradient or value that differs from the intended program's); an advisory claims no
    breakage, and says nothing of the kind."""
    assert bool(rule.torch_shows) != rule.advisory, rule.code


@pytest.mark.parametrize("code", RULES)
def test_example_is_flagged_and_use_instead_is_clean(code):
    for block in _blocks(code, "Example"):
        assert {c for c, _ in _findings(block, f"{code}_example.py")} == {code}, block
    for block in _blocks(code, "Use instead"):
        assert _findings(block, f"{code}_use_instead.py") == [], block


@pytest.fixture(scope="module")
def python():
    """Runs a script as ``python -W ignore:... script.py`` would, each in its own process,
    forked from one that imported torch once (tests/torch_runner.py)."""
    runner = TorchRunner(("-W", "ignore:Failed to initialize NumPy"))
    yield runner
    runner.close()


def _run(python: TorchRunner, source: str, path: Path) -> subprocess.CompletedProcess:
    path.write_text(source, encoding="utf-8")
    return python.run(path, timeout=120)


def _last_line_in(stderr: str, name: str) -> int:
    """The line of the innermost traceback frame in ``name``."""
    return int(re.findall(rf'File ".*{re.escape(name)}", line (\d+)', stderr)[-1])


@needs_torch
@pytest.mark.parametrize("code", RULES)
def test_examples_under_torch(code, tmp_path, python):
    for block in _blocks(code, "Example"):
        name = f"{code.lower()}_example.py"
        run = _run(python, block, tmp_path / name)
        lines = [line for c, line in _findings(block, name) if c == code]
        if code in RAISES:
            message, at_line = RAISES[code]
            assert run.returncode == 1 and message in run.stderr, run.stderr
            if at_line:
                assert _last_line_in(run.stderr, name) in lines, run.stderr
        elif code in WARNS:
            assert run.returncode == 0 and WARNS[code] in run.stderr, run.stderr
            assert any(f"{name}:{line}: UserWarning" in run.stderr for line in lines)
        else:  # silent: runs, and torch has nothing to say
            assert run.returncode == 0 and run.stderr == "", run.stderr
    for block in _blocks(code, "Use instead"):
        run = _run(python, block, tmp_path / f"{code.lower()}_use_instead.py")
        assert run.returncode == 0 and run.stderr == "", run.stderr


def test_docs_rules_md_is_up_to_date():
    assert (ROOT / ruledoc.DOC_PATH).read_text(encoding="utf-8") == ruledoc.document(), \
        f"docs/rules.md is stale: run `python {ruledoc.GENERATOR}`"
    check = subprocess.run([sys.executable, ruledoc.GENERATOR, "--check"], cwd=ROOT,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_docs_rules_md_indexes_and_explains_every_rule():
    document = (ROOT / ruledoc.DOC_PATH).read_text(encoding="utf-8")
    for info in RULES.values():
        assert f"| [{info.code}](#{info.name}-{info.code.lower()}) | {info.name} |" in document
        assert f"\n## {info.name} ({info.code})\n" in document
    assert "\n### Use instead\n" in document


def test_readme_links_the_rules_doc():
    assert "(docs/rules.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
