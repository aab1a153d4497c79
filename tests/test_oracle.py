"""torch proves every fixture annotation; and the oracle itself is proven able to fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

import oracle
from oracle import (
    EXPECTATIONS,
    FIXTURES_DIR,
    Expectation,
    fixture_files,
    neutralise,
    parse_expectations,
    register,
    run_source,
    verify_source,
)

FIXTURES = fixture_files()
FAKE_PATH = str(FIXTURES_DIR / "INLINE" / "inline_program.py")  # need not exist


def _rel(p: Path) -> str:
    return p.relative_to(FIXTURES_DIR.parent).as_posix()


# --------------------------------------------------------------------------- every fixture


@pytest.mark.parametrize("path", FIXTURES, ids=[_rel(p) for p in FIXTURES])
def test_fixture_proven_by_torch(path: Path) -> None:
    verdict = oracle.verify_file(path)
    assert verdict.ok, verdict.report()
    annotated = bool(verdict.expectations)
    assert annotated == path.name.startswith("bug_"), (
        f"{_rel(path)}: files with annotations are named bug_*.py, files without ok_*.py"
    )
    assert path.name.startswith(("bug_", "ok_"))
    first = path.read_text(encoding="utf-8").lstrip()
    assert first.startswith(('"""', "#")), f"{_rel(path)}: start with a docstring/comment saying what it models"
    codes = {c for cs in verdict.expectations.values() for c in cs}
    assert codes <= {path.parent.name}, f"{_rel(path)}: annotations {codes} outside its folder's code"


MINIMUM_BUGS = {"GG101": 11, "GG102": 7, "GG201": 22, "GG202": 5, "GG203": 3}
MINIMUM_NEAR_MISSES = 18


def test_fixture_counts() -> None:
    bugs = {code: [p for p in FIXTURES if p.parent.name == code and p.name.startswith("bug_")] for code in MINIMUM_BUGS}
    for code, minimum in MINIMUM_BUGS.items():
        assert len(bugs[code]) >= minimum, f"{code}: {len(bugs[code])} bug fixtures, need >= {minimum}"
    near = [p for p in FIXTURES if p.name.startswith("ok_")]
    assert len(near) >= MINIMUM_NEAR_MISSES, f"{len(near)} near-miss fixtures, need >= {MINIMUM_NEAR_MISSES}"
    for code in MINIMUM_BUGS:
        assert any(p.parent.name == code for p in near), f"{code}: no near-miss fixtures"


# --------------------------------------------------------------------------- parser


def test_parse_expectations_uses_real_comments_only() -> None:
    src = textwrap.dedent(
        '''\
        s = "# expect: GG101"  # a string is not a comment
        x = 1  # expect: GG101
        y = 2  # expect: GG101, GG102
        z = """
        # expect: GG102
        """
        q = 3  # noqa: E501  # expect:GG102
        '''
    )
    assert parse_expectations(src) == {2: {"GG101"}, 3: {"GG101", "GG102"}, 7: {"GG102"}}


# --------------------------------------------------------------------------- neutralise


def test_neutralise_keeps_line_numbers_and_handles_multiline() -> None:
    src = textwrap.dedent(
        """\
        import torch
        w = torch.zeros(3, requires_grad=True)
        w.add_(  # expect: GG101
            torch.ones(3),
        )  # trailing
        if True: w.mul_(2)  # expect: GG101
        a = 1; w.sub_(1)  # expect: GG101
        print(w)
        """
    )
    out = neutralise(src, {3, 6, 7})
    assert out.count("\n") == src.count("\n")
    compile(out, "x", "exec")
    lines = out.splitlines()
    assert lines[2] == "pass \\" and lines[5] == "if True: pass  # expect: GG101"
    assert lines[6] == "pass; pass  # expect: GG101"
    assert lines[7] == "print(w)"
    assert "add_" not in out and "mul_" not in out and "sub_" not in out


def test_neutralise_in_nested_function() -> None:
    src = "def f(w):\n    with ctx:\n        w.mul_(\n            2)\n    return w\n"
    out = neutralise(src, {3})
    assert out == "def f(w):\n    with ctx:\n        pass \\\n\n    return w\n"
    compile(out, "x", "exec")


# --------------------------------------------------------------------------- runner


def test_run_restores_global_torch_state() -> None:
    src = "import torch\ntorch.set_grad_enabled(False)\ntorch.set_default_dtype(torch.float64)\nprint('hi')\n"
    r = run_source(src, FAKE_PATH)
    assert r.exc is None and r.stdout == "hi\n"
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32


def test_run_reports_innermost_frame_inside_the_program() -> None:
    src = textwrap.dedent(
        """\
        import torch.nn as nn, torch
        def f(w):
            return nn.ReLU(inplace=True)(w)
        f(torch.ones(2, requires_grad=True))
        """
    )
    r = run_source(src, FAKE_PATH)
    assert isinstance(r.exc, RuntimeError) and r.frame_line == 3


# --------------------------------------------------------------------------- mode raises_here

GOOD_HERE = """\
import torch
w = torch.ones(3, requires_grad=True)
with torch.no_grad():
    w.mul_(2)
w.mul_(2)  # expect: GG101
w[0] = 1  # expect: GG102
def g():
    w[1:].zero_()  # expect: GG102
g()
"""


def test_raises_here_accepts_correct_annotations() -> None:
    v = verify_source(GOOD_HERE, FAKE_PATH)
    assert v.ok, v.report()


@pytest.mark.parametrize(
    "mutation, why",
    [
        (("w.mul_(2)  # expect: GG101", "w.mul_(2)  # expect: GG102"), "wrong code (leaf, not view)"),
        (("w[0] = 1  # expect: GG102", "w[0] = 1  # expect: GG101"), "wrong code (view, not leaf)"),
        (("    w.mul_(2)\nw.mul_(2)", "    w.mul_(2)  # expect: GG101\nw.mul_(2)"), "line that cannot raise"),
        (("w.mul_(2)  # expect: GG101", "w.mul_(2)"), "missing annotation: the clean run raises"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_raises_here_rejects_wrong_annotations(mutation: tuple[str, str], why: str) -> None:
    old, new = mutation
    assert old in GOOD_HERE
    bad = GOOD_HERE.replace(old, new, 1)
    assert bad != GOOD_HERE
    v = verify_source(bad, FAKE_PATH)
    assert not v.ok, f"oracle accepted a wrong annotation ({why}):\n{v.report()}"


def test_raises_here_rejects_error_raised_on_another_line() -> None:
    # The annotated line is innocent; the error comes from the next (unannotated) line.
    src = "import torch\nw = torch.ones(3, requires_grad=True)\nx = 1  # expect: GG101\nw.add_(1)\n"
    v = verify_source(src, FAKE_PATH)
    assert not v.ok
    assert any("not at line 3" in p for p in v.problems), v.report()


def test_near_miss_that_raises_fails() -> None:
    v = verify_source("import torch\ntorch.ones(2, requires_grad=True).add_(1)\n", FAKE_PATH)
    assert not v.ok and "near-miss must run clean" in v.problems[0]


def test_unknown_code_fails() -> None:
    v = verify_source("x = 1  # expect: GG999\n", FAKE_PATH)
    assert not v.ok and "unknown code" in v.problems[0]


def test_annotation_not_on_a_statement_fails() -> None:
    src = "import torch\nw = torch.ones(2, requires_grad=True)\nif w.add_(1) is None:  # expect: GG101\n    pass\n"
    v = verify_source(src, FAKE_PATH)
    assert not v.ok and "not on a simple statement" in v.problems[0]


def test_gg101_predicate_does_not_accept_the_view_message() -> None:
    view_err = RuntimeError(oracle.VIEW_OF_LEAF_MSG + ".")
    leaf_err = RuntimeError(oracle.LEAF_MSG + ".")
    assert EXPECTATIONS["GG102"].matches(view_err) and not EXPECTATIONS["GG102"].matches(leaf_err)
    assert EXPECTATIONS["GG101"].matches(leaf_err) and not EXPECTATIONS["GG101"].matches(view_err)
    assert not EXPECTATIONS["GG101"].matches(ValueError(oracle.LEAF_MSG))


# --------------------------------------------------------------------------- mode raises_later

LATER_MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"


@pytest.fixture
def later_code():
    """A throw-away code in mode raises_later: the error surfaces at backward()."""
    code = "GG990"
    assert code not in EXPECTATIONS
    register(Expectation(code, "raises_later", RuntimeError, LATER_MSG))
    yield code
    del EXPECTATIONS[code]


GOOD_LATER = """\
import torch
x = torch.ones(3, requires_grad=True)
y = x.sigmoid()
z = y * 2
y.mul_(2)  # expect: {code}
z.sum().backward()
a = torch.ones(3, requires_grad=True)
b = a.exp()
b.add_(1)  # expect: {code}
b.sum().backward()
"""


def test_raises_later_accepts_correct_annotations(later_code: str) -> None:
    v = verify_source(GOOD_LATER.format(code=later_code), FAKE_PATH)
    assert v.ok, v.report()
    # ... and the error really was raised elsewhere than the annotated line (at backward()).
    r = run_source(neutralise(GOOD_LATER.format(code=later_code), {9}), FAKE_PATH)
    assert isinstance(r.exc, RuntimeError) and r.frame_line == 6


def test_raises_later_rejects_innocent_line(later_code: str) -> None:
    src = GOOD_LATER.format(code=later_code).replace("z = y * 2", f"z = y * 2  # expect: {later_code}")
    v = verify_source(src, FAKE_PATH)
    assert not v.ok, v.report()


def test_raises_later_rejects_missing_annotation(later_code: str) -> None:
    src = GOOD_LATER.format(code=later_code).replace(f"b.add_(1)  # expect: {later_code}", "b.add_(1)")
    v = verify_source(src, FAKE_PATH)
    assert not v.ok and any("must run clean" in p for p in v.problems), v.report()


def test_raises_later_rejects_wrong_message(later_code: str) -> None:
    src = "import torch\nw = torch.ones(3, requires_grad=True)\nw.add_(1)  # expect: " + later_code + "\n"
    v = verify_source(src, FAKE_PATH)
    assert not v.ok and "expected RuntimeError containing" in v.problems[0], v.report()


def test_register_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError):
        register(Expectation("GG991", "raises_sometimes", RuntimeError, "x"))
    assert "GG991" not in EXPECTATIONS
