"""Fixes: applying them, the command line's --fix/--diff, and every fixture's fixes proven.

For each fixture annotated with a code that has fixes, every fix (safe and unsafe) is
applied the way ``--fix --unsafe-fixes`` applies them. The fixed file must lint without
the fixed findings (``fix_text`` checks that), and fixing it again must change nothing.
Where every finding of a single-file fixture got a fix, torch proves the fixed program:
it runs clean, and after its backward every requires-grad leaf and every parameter of
its final tensors (globals, module and optimizer parameters: ``oracle._final_tensors``)
has the gradient it has in a reference run written independently of the fix; a gradient
that is ``None`` on one side only, or a leaf found on one side only, fails
(``_gradient_diff``). The reference is the original program with each fixed line
written as it was meant:

- GG101/GG102 (a write into a leaf): where the fixture states the intended computation
  on a comment line right above the write, ``# intended: <statement>`` (for a write that
  is part of the computation: its out-of-place form, e.g. ``# intended: x =
  x.masked_scatter(mask, v)`` above ``x[mask] = v``), that statement replaces the line.
  A line without one claims to be an update of the tensor (initialisation, a manual
  step, weight surgery with constants or ``.grad``): torch checks the claim first (no
  tensor written in at that line requires grad: ``_writes_a_grad_value``, watching the
  in-place ops the line runs), and the reference then runs the line with grad mode off,
  which is what an unrecorded update means. A line whose written value requires grad and
  that states no intended computation fails: the write was meant to be differentiable,
  and only its author can say how. Every GG101/GG102 line whose written value requires
  grad is also checked to get no ``torch.no_grad()`` fix at all, whether or not the
  fixture is fully fixed (``test_no_grad_is_never_offered_for_a_value_that_requires_grad``);
- GG201 (a write into a saved tensor): the original run inside
  ``torch.autograd.graph.allow_mutation_on_saved_tensors()``, where torch keeps what was
  saved: the gradients the out-of-place op gives;
- GG302 and GG308 (equivalent rewrites): the original itself, and there every final
  tensor (values too) must be the same.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
from oracle import (
    FIXTURES_DIR,
    OracleError,
    Program,
    _sole_statement,
    _Src,
    fixture_files,
    parse_annotations,
    parse_expectations,
    program_files,
    state_diff,
)
from oracle import apply_fixes as oracle_fixes

from gradguard import check_source
from gradguard.domain.findings import SAFE, UNSAFE, Edit, Fix
from gradguard.editing.fixes import apply_fixes, fix_text
from gradguard.rules import ALL_RULES
from gradguard.syntax.text import FileChangedError, write_atomically

FIXABLE = ("GG101", "GG102", "GG201", "GG302", "GG308")
# Unsafe fixes change what the program computes where another name sees the tensor: here
# ``a = attn; a *= mask`` masks ``attn`` too, which ``a = a * mask`` does not. Each is
# listed; a safe fix may never change a gradient.
UNSAFE_FIXES_THAT_CHANGE_GRADIENTS = {"GG201/bug_softmax_alias_imul.py"}
EQUIVALENT = {"GG302", "GG308"}


def _annotated_with_fixable_codes() -> list[Path]:
    found = []
    for path in fixture_files():
        files = program_files(path) if path.is_dir() else [path]
        codes = {code for file in files
                 for keys in parse_expectations(file.read_text(encoding="utf-8")).values()
                 for code in keys}
        if codes & set(FIXABLE):
            found.append(path)
    return found


CANDIDATES = _annotated_with_fixable_codes()


def _lint(path: Path):
    def lint(text: str):
        return [f for f in check_source(text, str(path), ALL_RULES) if f.path == str(path)]
    return lint


def _rel(path: Path) -> str:
    return path.relative_to(FIXTURES_DIR).as_posix()


# ----------------------------------------------------------------------------- applying
def test_fixes_apply_from_the_end_and_an_overlapping_one_waits():
    text = "a = 1\nb = 2\n"
    first = Fix("one", SAFE, (Edit(1, 5, 1, 6, "10"),))
    second = Fix("two", SAFE, (Edit(1, 1, 1, 1, "# x\n"), Edit(2, 5, 2, 6, "20")))
    overlapping = Fix("three", SAFE, (Edit(1, 5, 1, 6, "99"),))
    new, taken = apply_fixes(text, [overlapping, second, first])
    assert taken == [second, overlapping] or taken == [second, first]
    assert new in ("# x\na = 99\nb = 20\n", "# x\na = 10\nb = 20\n")


def test_two_insertions_at_one_place_keep_their_order():
    fix = Fix("f", SAFE, (Edit(1, 1, 1, 1, "import torch\n"), Edit(1, 1, 1, 1, "with x:\n    ")))
    assert apply_fixes("w.mul_(2)\n", [fix])[0] == "import torch\nwith x:\n    w.mul_(2)\n"


def test_a_fix_whose_edits_overlap_each_other_is_not_applied():
    fix = Fix("f", SAFE, (Edit(1, 1, 2, 3, "x"), Edit(2, 1, 2, 1, "    ")))
    assert apply_fixes("a = (1,\n 2)\n", [fix]) == ("a = (1,\n 2)\n", [])


def test_a_data_assignment_over_several_lines_keeps_its_lines(tmp_path):
    source = (b"import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n"
              b"    def __init__(self):\n        super().__init__()\n"
              b"        self.a = nn.Linear(2, 2)\n        if True:\n"
              b"            self.a.weight.data = nn.Parameter(\n"
              b"                torch.zeros(2, 2), requires_grad=True\n            )\n\nM()\n")
    (tmp_path / "a.py").write_bytes(source)
    run = gradguard(tmp_path, "--fix", "--unsafe-fixes", "a.py")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "a.py").read_bytes().endswith(
        b"        if True:\n            with torch.no_grad():\n"
        b"                self.a.weight.copy_(nn.Parameter(\n"
        b"                    torch.zeros(2, 2), requires_grad=True\n                ))\n\nM()\n")


def test_lines_are_counted_as_python_counts_them():
    text = "a = 1\r\nb = '\x0c'\rc = 3\n"
    fix = Fix("f", SAFE, (Edit(3, 5, 3, 6, "4"),))
    assert apply_fixes(text, [fix])[0] == "a = 1\r\nb = '\x0c'\rc = 4\n"


def test_a_fix_that_breaks_the_file_is_undone():
    def lint(text):
        if "(" in text:
            return check_source(text, "x.py", ALL_RULES)
        return [_finding_with(Fix("bad", SAFE, (Edit(1, 1, 1, 1, "("),)))]
    result = fix_text("x = 1\n", lint, unsafe=False)
    assert result.text == "x = 1\n" and "fail to lint" in result.failure


def _finding_with(fix):
    from gradguard.domain.findings import Finding
    return Finding("x.py", 1, 1, "GG101", "m", fix=fix)


def test_atomic_write_keeps_the_mode_and_refuses_a_changed_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"old\n")
    path.chmod(0o640)
    write_atomically(str(path), b"new\n", b"old\n")
    assert path.read_bytes() == b"new\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    with pytest.raises(FileChangedError):
        write_atomically(str(path), b"newer\n", b"old\n")
    assert path.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temporary left behind


# ----------------------------------------------------------------------------- the command line
BUGGY = (b"import torch\nimport torch.nn as nn\n\nw = torch.zeros(3, requires_grad=True)\n"
         b"w.mul_(2)  # a comment kept\nx = torch.randn(3)\nout = (x * w).sigmoid()\n"
         b"out += 1\nout.sum().backward()\n")


def gradguard(cwd, *args, stdin=None):
    return subprocess.run([sys.executable, "-m", "gradguard", "check", *args], cwd=cwd,
                          input=stdin, capture_output=True, timeout=120)


def test_fix_writes_safe_fixes_and_a_second_run_changes_nothing(tmp_path):
    (tmp_path / "a.py").write_bytes(BUGGY)
    run = gradguard(tmp_path, "--fix", "--show-fixes", "a.py")
    fixed = (tmp_path / "a.py").read_bytes()
    assert b"with torch.no_grad():\n    w.mul_(2)  # a comment kept\n" in fixed
    assert b"out += 1" in fixed  # unsafe: not without --unsafe-fixes
    assert run.returncode == 1 and b"GG201" in run.stdout and b"GG101" not in run.stdout
    assert b"1 \xc3\x97 GG101 (leaf-inplace)" in run.stderr
    again = gradguard(tmp_path, "--fix", "a.py")
    assert (tmp_path / "a.py").read_bytes() == fixed
    assert b"No findings fixed (1 fix available with `--unsafe-fixes`)." in again.stderr


def test_unsafe_fixes_and_exit_zero_when_all_is_fixed(tmp_path):
    (tmp_path / "a.py").write_bytes(BUGGY)
    run = gradguard(tmp_path, "--fix", "--unsafe-fixes", "a.py")
    assert run.returncode == 0, run.stderr
    assert b"out = out + 1" in (tmp_path / "a.py").read_bytes()


def test_diff_writes_nothing_and_exits_1(tmp_path):
    (tmp_path / "a.py").write_bytes(BUGGY)
    run = gradguard(tmp_path, "--diff", "a.py")
    assert run.returncode == 1 and (tmp_path / "a.py").read_bytes() == BUGGY
    assert b"+with torch.no_grad():\n+    w.mul_(2)" in run.stdout.replace(b"\r", b"")
    assert gradguard(tmp_path, "--diff", "--select", "GG201", "a.py").returncode == 0


def test_fix_on_standard_input_prints_the_fixed_source(tmp_path):
    run = gradguard(tmp_path, "--fix", "-", stdin=BUGGY)
    assert run.stdout.startswith(b"import torch\n") and b"    w.mul_(2)" in run.stdout
    assert b"GG201" in run.stderr


def test_a_file_without_import_torch_gets_one(tmp_path):
    source = (b'"""Doc."""\nfrom __future__ import annotations\nfrom torch import nn\n\n'
              b"layer = nn.Linear(2, 2)\nlayer.weight.mul_(2)\n")
    (tmp_path / "a.py").write_bytes(source)
    gradguard(tmp_path, "--fix", "a.py")
    assert (tmp_path / "a.py").read_bytes() == (
        b'"""Doc."""\nfrom __future__ import annotations\nimport torch\nfrom torch import nn\n\n'
        b"layer = nn.Linear(2, 2)\nwith torch.no_grad():\n    layer.weight.mul_(2)\n")


def test_writes_one_after_another_share_one_block(tmp_path):
    source = (b"import torch\nimport torch.nn as nn\n\nlayer = nn.Linear(2, 2)\n"
              b"if True:\n    layer.weight.data.zero_()\n    layer.bias.data.zero_()\n"
              b"    layer.bias.data.add_(\n        1)\n\n    layer.weight.data.add_(1)\n")
    (tmp_path / "a.py").write_bytes(source)
    gradguard(tmp_path, "--fix", "a.py")
    assert (tmp_path / "a.py").read_bytes() == (
        b"import torch\nimport torch.nn as nn\n\nlayer = nn.Linear(2, 2)\n"
        b"if True:\n    with torch.no_grad():\n        layer.weight.zero_()\n"
        b"        layer.bias.zero_()\n        layer.bias.add_(\n            1)\n\n"
        b"    with torch.no_grad():\n        layer.weight.add_(1)\n")


def test_what_cannot_be_wrapped_is_not(tmp_path):
    source = (b"import torch as th\nw = th.zeros(3, requires_grad=True)\n"
              b"w.mul_(2); x = 1\nf = lambda: w.add_(1)\nf()\nw.sub_(1)\n")
    (tmp_path / "a.py").write_bytes(source)
    gradguard(tmp_path, "--fix", "a.py")
    fixed = (tmp_path / "a.py").read_bytes()
    assert fixed.startswith(source[:source.index(b"w.sub_")])  # `a; b`, a lambda: kept
    assert fixed.endswith(b"with th.no_grad():\n    w.sub_(1)\n")


DIFFERENTIABLE = (b"import torch\nimport torch.nn as nn\n\nproj = nn.Linear(6, 4)\n"
                  b"emb = torch.zeros(2, 4).requires_grad_()\nmask = torch.tensor([True, False])\n"
                  b"emb[mask] = proj(torch.randn(1, 6))\n")


def test_a_differentiable_write_is_not_put_under_no_grad(tmp_path):
    """The pre-commit hook runs ``--fix``: a write of a value that requires grad is left
    as it is (its only fix is unsafe), and ``--unsafe-fixes`` writes into a clone."""
    (tmp_path / "a.py").write_bytes(DIFFERENTIABLE)
    run = gradguard(tmp_path, "--fix", "a.py")
    assert run.returncode == 1 and (tmp_path / "a.py").read_bytes() == DIFFERENTIABLE
    assert b"no_grad():` or" not in run.stdout and b"out of place or into a clone" in run.stdout
    gradguard(tmp_path, "--fix", "--unsafe-fixes", "a.py")
    assert (tmp_path / "a.py").read_bytes().endswith(
        b"emb = emb.clone()\nemb[mask] = proj(torch.randn(1, 6))\n")


@pytest.mark.parametrize("write, fixed", [
    ("w[0] = 0", "no_grad"),  # a constant
    ("w.copy_(torch.ones(3))", "no_grad"),  # a tensor that does not require grad
    ("w -= 0.1 * w.grad", "no_grad"),  # .grad does not require grad
    ("w[0] += math.log(2.0)", "no_grad"),  # a number
    ("w += v", "w = w + v"),
    ("w.copy_(v)", "w = w.clone()"),
    ("layer.weight.copy_(v)", None),  # a parameter: rebinding a name would not reach it
    ("w[1:] += v[1:]", None),  # a write into a view
])
def test_the_fix_depends_on_the_value_written(write, fixed):
    source = ("import math\nimport torch\nlayer = torch.nn.Linear(3, 3)\n"
              "w = torch.zeros(3, requires_grad=True)\nw.sum().backward()\n"
              f"v = torch.ones(3, requires_grad=True) * 2\n{write}\n")
    (finding,) = [f for f in check_source(source, "a.py", ALL_RULES)
                  if f.code in ("GG101", "GG102")]
    if fixed is None:
        assert finding.fix is None and "no_grad():`" not in finding.message
        return
    assert fixed in "".join(edit.content for edit in finding.fix.edits)
    assert finding.fix.safe is (fixed == "no_grad")


# ----------------------------------------------------------------------------- every fixture
@pytest.mark.parametrize("path", CANDIDATES, ids=_rel)
def test_fixes_of_a_fixture(path: Path) -> None:
    files = program_files(path) if path.is_dir() else [path]
    fully_fixed = []
    for file in files:
        text = file.read_text(encoding="utf-8")
        result = fix_text(text, _lint(file), unsafe=True)
        assert result.failure is None, f"{file}: {result.failure}"
        if result.fixed:
            compile(result.text, str(file), "exec")
            again = fix_text(result.text, _lint(file), unsafe=True)
            assert again.text == result.text and not again.fixed, "a second fix changed more"
        left = [f for f in result.findings if f.code not in {"GG001", "GG002", "GG003"}]
        fully_fixed.append((file, text, result, not left and bool(result.fixed)))
    if path.is_dir() or not fully_fixed[0][3]:
        return  # proven by torch below only where a single file's findings all had fixes
    file, text, result, _ = fully_fixed[0]
    _prove(file, text, result.text)


def _prove(file: Path, original: str, fixed: str) -> bool:
    """The fixed program behaves as the reference: where the reference runs clean (the
    case of every realistic fixture), the fixed program runs clean and its gradients are
    the reference's; a reference that raises (a fixture of one-line demonstrations, such
    as ``w &= 1`` on a float leaf, whose next error the fix reveals) is matched by the
    same error at the same line. Returns whether both ran clean."""
    findings = [f for f in check_source(original, str(file), ALL_RULES) if f.path == str(file)]
    codes = {f.code for f in findings}
    reference = _reference(file, original, {f.line for f in findings
                                            if f.code in ("GG101", "GG102")})
    fixed_run = Program.single(fixed, file).run(snapshot=True)
    if "GG201" in codes:
        import torch
        with torch.autograd.graph.allow_mutation_on_saved_tensors():
            reference_run = Program.single(reference, file).run(snapshot=True)
    else:
        reference_run = Program.single(reference, file).run(snapshot=True)
    if reference_run.exc is not None:
        assert type(fixed_run.exc) is type(reference_run.exc), fixed_run.describe()
        assert fixed.splitlines()[fixed_run.frame_line - 1].strip() == \
            reference.splitlines()[reference_run.frame_line - 1].strip()
        return False
    assert fixed_run.exc is None, f"the fixed program {fixed_run.describe()}:\n{fixed}"
    changed = _gradient_diff(reference_run.state, fixed_run.state)
    unsafe = any(f.fix is not None and not f.fix.safe for f in findings)
    if unsafe and _rel(file) in UNSAFE_FIXES_THAT_CHANGE_GRADIENTS:
        assert changed, "a listed unsafe fix no longer changes a gradient: unlist it"
        return True
    assert changed == [], fixed
    if codes <= EQUIVALENT:
        assert state_diff(reference_run.state, fixed_run.state) == [], fixed
    return True


def _gradient_diff(reference: dict, fixed: dict) -> list[str]:
    """Every requires-grad leaf (parameters included) of either run whose ``.grad`` is not
    the same in the other, ``None`` against a tensor included, or that the other run does
    not have at all."""
    leaves = {key for state in (reference, fixed) for key, tensor in state.items()
              if tensor.is_leaf and tensor.requires_grad}
    return sorted(key for key in leaves
                  if key not in reference or key not in fixed
                  or not _same_grad(reference[key].grad, fixed[key].grad))


def _same_grad(a, b) -> bool:
    """Equal up to rounding: a reference's graph may differ from the fix's while computing
    the same (``masked_scatter`` against a write into a clone)."""
    import torch
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-6, atol=1e-7, equal_nan=True)


INTENDED = "# intended:"


def _reference(file: Path, original: str, lines: set[int]) -> str:
    """The original with each GG101/GG102 line as it was meant: its ``# intended:``
    statement, else (an update, once torch agrees that nothing written in requires
    grad) the line with grad mode off."""
    reference = original
    for line in sorted(lines, reverse=True):
        intended = _intended(original, line)
        if intended is not None:
            reference = _replaced(reference, line, intended)
            continue
        assert not _writes_a_grad_value(file, original, line), (
            f"{file}:{line} writes a value that requires grad: state the intended "
            f"computation on a comment line above it ({INTENDED} <out-of-place statement>)")
        reference = _grad_off_around(reference, line)
    return reference


def _intended(source: str, line: int) -> Optional[str]:
    """The statement of an ``# intended:`` comment line right above the statement at
    ``line``, if there is one."""
    statement = _sole_statement(_Src(source), line)
    above = source.splitlines()[statement.lineno - 2].strip() if statement.lineno > 1 else ""
    return above[len(INTENDED):].strip() if above.startswith(INTENDED) else None


def _replaced(source: str, line: int, statement_text: str) -> str:
    """``source`` with the (one-line) statement at ``line`` replaced by ``statement_text``."""
    src = _Src(source)
    statement = _sole_statement(src, line)
    if statement.lineno != statement.end_lineno:
        raise OracleError(f"line {line}: an intended statement replaces one-line statements")
    return src.apply([(src.start(statement), src.end(statement),
                       statement_text.encode("utf-8"))])


def _grad_off_around(source: str, line: int) -> str:
    """The statement at ``line`` run with grad mode off (and on again after it)."""
    src = _Src(source)
    statement = _sole_statement(src, line)
    lines = source.splitlines(keepends=True)
    indent = lines[statement.lineno - 1][: statement.col_offset]
    lines.insert(statement.end_lineno, f"{indent}__import__('torch').set_grad_enabled(True)\n")
    lines.insert(statement.lineno - 1, f"{indent}__import__('torch').set_grad_enabled(False)\n")
    return "".join(lines)


INPLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
    "__irshift__"})


def _writes_a_grad_value(file: Path, source: str, line: int) -> bool:
    """Whether torch, running the fixture with every other annotated line fixed as the
    oracle fixes it, sees an in-place op at ``line`` (``x[i] = v``, ``x += v``,
    ``x.copy_(v)``, ``F.relu(x, inplace=True)``) write in a tensor that requires grad.
    The op's first tensor argument is the tensor written into; the others are what it
    writes.
    Ops with grad mode off (``nn.Linear(...)`` initialising its parameters) are not
    recorded, so they do not count."""
    import torch
    from torch.overrides import TorchFunctionMode

    annotations = parse_annotations(source)
    base = oracle_fixes(source, annotations, set(annotations) - {line})
    seen = []

    class WatchInplaceWrites(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if _is_inplace(func, kwargs) and torch.is_grad_enabled() \
                    and _innermost_line(str(file)) == line:
                tensors = _tensors((args, kwargs))  # nn.init.*_ passes tensor= as well
                seen.extend(t.requires_grad for t in tensors[1:] if t is not tensors[0])
            return func(*args, **kwargs)

    with WatchInplaceWrites():
        Program.single(base, file).run()
    return any(seen)


def _is_inplace(func, kwargs: dict) -> bool:
    name = getattr(func, "__name__", "")
    return name in INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")) \
        or kwargs.get("inplace") is True


def _innermost_line(path: str) -> Optional[int]:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != path:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


def _tensors(value) -> list:
    import torch
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


LEAF_WRITES = [path for path in CANDIDATES if not path.is_dir() and {
    code for codes in parse_expectations(path.read_text(encoding="utf-8")).values()
    for code in codes} & {"GG101", "GG102"}]


@pytest.mark.parametrize("path", LEAF_WRITES, ids=_rel)
def test_no_grad_is_never_offered_for_a_value_that_requires_grad(path: Path) -> None:
    """Where torch sees a GG101/GG102 line write in a value that requires grad, the
    write is part of the computation: its finding offers no fix that puts it under
    ``torch.no_grad()`` (the value's gradient would silently stay ``None``)."""
    text = path.read_text(encoding="utf-8")
    findings = [f for f in check_source(text, str(path), ALL_RULES)
                if f.path == str(path) and f.code in ("GG101", "GG102")]
    for finding in findings:
        if not _writes_a_grad_value(path, text, finding.line):
            continue
        assert "under `with torch.no_grad():`" not in finding.message, finding.message
        if finding.fix is not None:
            added = "".join(edit.content for edit in finding.fix.edits)
            assert "no_grad" not in added and not finding.fix.safe, finding.fix


def test_the_reference_of_a_differentiable_write_is_its_intended_statement(tmp_path):
    """A GG101 line that writes a grad-requiring value and states no intended computation
    cannot be proven; one that states it is replaced by it (the proof cannot assume
    the fix's ``torch.no_grad()``)."""
    source = ("import torch\nw = torch.zeros(3, requires_grad=True)\n"
              "v = torch.ones(3, requires_grad=True)\nw += v  # expect: GG101\n")
    file = tmp_path / "a.py"
    with pytest.raises(AssertionError, match="writes a value that requires grad"):
        _reference(file, source, {4})
    stated = source.replace("w += v", f"{INTENDED} w = w + v\nw += v")
    assert _reference(file, stated, {5}).splitlines()[4] == "w = w + v  # expect: GG101"
    update = source.replace("w += v", "w += 2")
    assert "set_grad_enabled(False)" in _reference(file, update, {4})


def test_every_fixable_code_has_proven_fixtures():
    """The codes with fixes are fixed in some fixture (the parametrized test then proves
    them): a rule whose rewrite never applies would pass vacuously."""
    fixed = set()
    for path in CANDIDATES:
        if path.is_dir():
            continue
        result = fix_text(path.read_text(encoding="utf-8"), _lint(path), unsafe=True)
        fixed |= set(result.fixed)
    assert fixed == set(FIXABLE)


def test_fix_safety_is_marked():
    findings = check_source(BUGGY, "a.py", ALL_RULES)
    by_code = {f.code: f.fix for f in findings}
    assert by_code["GG101"].applicability == SAFE
    assert by_code["GG201"].applicability == UNSAFE
