"""torch proves every fixture annotation; and the oracle itself is proven able to fail."""

from __future__ import annotations

import sys
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
    """A fixture is a file, or a folder (``main.py`` plus the modules it imports)."""
    verdict = oracle.verify_file(path)
    assert verdict.ok, verdict.report()
    annotated = bool(verdict.expectations)
    assert annotated == path.name.startswith("bug_"), (
        f"{_rel(path)}: fixtures with annotations are named bug_*, fixtures without ok_*"
    )
    assert path.name.startswith(("bug_", "ok_"))
    if path.is_dir():
        assert (path / oracle.MAIN).is_file(), f"{_rel(path)}: a folder fixture runs its {oracle.MAIN}"
        entry = path / oracle.MAIN
    else:
        assert path.suffix == ".py"
        entry = path
    first = entry.read_text(encoding="utf-8").lstrip()
    assert first.startswith(('"""', "#")), f"{_rel(entry)}: start with a docstring/comment saying what it models"
    codes = {c for cs in verdict.expectations.values() for c in cs}
    assert codes <= {path.parent.name}, f"{_rel(path)}: annotations {codes} outside its folder's code"


MINIMUM_BUGS = {
    "GG101": 11, "GG102": 7, "GG201": 22, "GG202": 5, "GG203": 3,
    "GG301": 5, "GG302": 5, "GG303": 3, "GG304": 4, "GG305": 3, "GG306": 3, "GG307": 2, "GG308": 2,
    "GG309": 2, "GG310": 2,
}
MINIMUM_NEAR_MISSES = 18


def test_fixture_counts() -> None:
    bugs = {code: [p for p in FIXTURES if p.parent.name == code and p.name.startswith("bug_")] for code in MINIMUM_BUGS}
    for code, minimum in MINIMUM_BUGS.items():
        assert len(bugs[code]) >= minimum, f"{code}: {len(bugs[code])} bug fixtures, need >= {minimum}"
    near = [p for p in FIXTURES if p.name.startswith("ok_")]
    assert len(near) >= MINIMUM_NEAR_MISSES, f"{len(near)} near-miss fixtures, need >= {MINIMUM_NEAR_MISSES}"
    for code in MINIMUM_BUGS:
        assert any(p.parent.name == code for p in near), f"{code}: no near-miss fixtures"
    folders = [p for p in FIXTURES if p.is_dir()]
    assert any(p.name.startswith("bug_") for p in folders) and any(p.name.startswith("ok_") for p in folders), \
        "the folder form (a program of several files) has bug and near-miss fixtures"


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


FLAG_LINES = """\
import torch
import torch.nn as nn
net = nn.Sequential(
    nn.Linear(3, 4),
    nn.ReLU(inplace=True),{innocent}
    nn.Sigmoid(),
    nn.ReLU(True),  # expect: {code}
)
net(torch.randn(2, 3)).sum().backward()
"""


def test_a_flag_line_is_fixed_by_turning_the_flag_off() -> None:
    src = "import torch.nn as nn\nact = nn.Dropout(0.5, True)\nact.inplace = True\n" \
          "f = nn.ReLU(inplace=True)\nk = dict(inplace=True, other=True)\n"
    fixed = [oracle.flag_off(src, line) for line in (2, 3, 4, 5)]
    assert [out.splitlines()[line - 1] for out, line in zip(fixed, (2, 3, 4, 5))] == [
        "act = nn.Dropout(0.5, False)", "act.inplace = False", "f = nn.ReLU(inplace=False)",
        "k = dict(inplace=False, other=True)"]
    with pytest.raises(oracle.OracleError):
        oracle.flag_off(src, 1)


def test_a_flag_fix_at_a_column_turns_off_only_that_layers_flag() -> None:
    """Two layers' flags on one line: a finding placed at one layer (its call's column)
    is fixed by turning off that layer's flag alone; a column where no layer starts
    leaves the line's every flag to turn off."""
    line = "net = nn.Sequential(nn.ELU(inplace=True), nn.Sigmoid(), nn.ReLU(True))"
    src = f"import torch.nn as nn\n{line}\n"
    relu, elu = line.index("nn.ReLU") + 1, line.index("nn.ELU") + 1
    assert oracle.flag_off(src, 2, {relu}).splitlines()[1] == line.replace("(True)", "(False)")
    assert oracle.flag_off(src, 2, {elu}).splitlines()[1] == line.replace("inplace=True", "inplace=False")
    assert oracle.flag_off(src, 2, {1}) == oracle.flag_off(src, 2) == \
        src.replace("True", "False")


def test_raises_later_proves_a_flag_line_inside_a_statement(later_code: str) -> None:
    """The flag's line in a multi-line nn.Sequential(...): neutralising the statement would
    leave `net` undefined; turning the flag off keeps it and removes the write."""
    v = verify_source(FLAG_LINES.format(code=later_code, innocent=""), FAKE_PATH)
    assert v.ok, v.report()


def test_raises_later_rejects_an_innocent_flag_line(later_code: str) -> None:
    """The ReLU after the Linear writes nothing that was saved: turning it off does not help."""
    src = FLAG_LINES.format(code=later_code, innocent=f"  # expect: {later_code}")
    v = verify_source(src, FAKE_PATH)
    assert not v.ok, v.report()


def test_register_rejects_unknown_mode() -> None:
    with pytest.raises(ValueError):
        register(Expectation("GG991", "raises_sometimes", RuntimeError, "x"))
    assert "GG991" not in EXPECTATIONS


# --------------------------------------------------------------------------- GG3xx: annotations with variants


def test_parse_annotations_keeps_variant_and_expectations_drop_it() -> None:
    src = textwrap.dedent(
        """\
        a = 1  # expect: GG304[trains_nothing]
        b = 2  # expect: GG304[trains_nothing], GG305
        c = 3  # expect: GG306, GG308[legacy_noop]
        """
    )
    assert oracle.parse_annotations(src) == {
        1: {"GG304[trains_nothing]"}, 2: {"GG304[trains_nothing]", "GG305"}, 3: {"GG306", "GG308[legacy_noop]"},
    }
    assert parse_expectations(src) == {1: {"GG304"}, 2: {"GG304", "GG305"}, 3: {"GG306", "GG308"}}


def test_every_new_code_and_variant_is_registered() -> None:
    for key, mode in {
        "GG301": "silent_corruption", "GG302": "equivalent_fix", "GG303": "silent_change",
        "GG304": "raises_here", "GG304[trains_nothing]": "trains_nothing", "GG305": "warns_here",
        "GG306": "raises_here", "GG306[raises_later]": "raises_later", "GG306[no_gradient]": "no_gradient",
        "GG307": "no_gradient", "GG308": "warns_here", "GG308[legacy_noop]": "legacy_noop",
        "GG309": "silent_change", "GG310": "no_gradient",
    }.items():
        assert EXPECTATIONS[key].mode == mode and EXPECTATIONS[key].key == key


def test_unknown_variant_fails() -> None:
    v = verify_source("import torch\nx = 1  # expect: GG304[bogus]\n", FAKE_PATH)
    assert not v.ok and "unknown code" in v.problems[0]


def test_register_rejects_bad_variant_and_fix() -> None:
    with pytest.raises(ValueError):
        register(Expectation("GG992", "raises_here", RuntimeError, "x", variant="Bad-Name"))
    with pytest.raises(ValueError):
        register(Expectation("GG992", "raises_here", RuntimeError, "x", fix="teleport"))
    assert not any(k.startswith("GG992") for k in EXPECTATIONS)


# --------------------------------------------------------------------------- GG3xx: rewrites


def _same_shape(a: str, b: str) -> None:
    assert a.count("\n") == b.count("\n")
    compile(b, "x", "exec")


def test_data_to_detach() -> None:
    src = "a = x.data\nx.data[0] = 1\nx.data.mul_(2)\nx.data *= k  # c\nx.data = y\nz = p.grad.data.sum()\n"
    out = oracle.data_to_detach(src)
    _same_shape(src, out)
    assert out.splitlines() == [
        "a = x.detach()", "x.detach()[0] = 1", "x.detach().mul_(2)", "x.detach().__imul__(k)  # c",
        "x.data = y", "z = p.grad.detach().sum()",
    ]


def test_nograd_rewrite() -> None:
    src = (
        "for p in ps:\n    p.data.clamp_(-c, c)  # expect: GG302\n"
        "m.w.data = m.w.data * mask\nq.data -= lr * q.grad.data\n"
    )
    assert oracle.nograd_rewrite(src, 2).splitlines()[1] == "    with torch.no_grad(): p.clamp_(-c, c)  # expect: GG302"
    assert oracle.nograd_rewrite(src, 3).splitlines()[2] == "with torch.no_grad(): m.w.copy_(m.w * mask)"
    assert oracle.nograd_rewrite(src, 4).splitlines()[3] == "with torch.no_grad(): q -= lr * q.grad"
    for line in (2, 3, 4):
        _same_shape(src, oracle.nograd_rewrite(src, line))
    with pytest.raises(oracle.OracleError):
        oracle.nograd_rewrite("a = 1; p.data.zero_()\n", 1)  # not alone on its line
    with pytest.raises(oracle.OracleError):
        oracle.nograd_rewrite("p.zero_()\n", 1)  # no .data


def test_strip_detach_unwrap_variable_and_clone_variants() -> None:
    src = "loss = a + f(b.detach()) + c.data.sum()\nh.detach_()\nx = Variable(t, requires_grad=True, volatile=False)\n"
    assert oracle.strip_detach(src, 1).splitlines()[0] == "loss = a + f(b) + c.sum()"
    assert oracle.strip_detach(src, 2).splitlines()[1] == "h"
    assert oracle.unwrap_variable(src, 3).splitlines()[2] == "x = (t).requires_grad_(True)"
    assert oracle.detach_to_clone(src).splitlines()[0] == "loss = a + f(b.detach().clone()) + c.data.sum()"
    assert oracle.data_clone_variant("p.data.add_(g.data)\n", 1) == "p.data.clone().add_(g.data.clone())\n"
    with pytest.raises(oracle.OracleError):
        oracle.strip_detach(src, 3)
    with pytest.raises(oracle.OracleError):
        oracle.unwrap_variable(src, 1)


# --------------------------------------------------------------------------- GG3xx: every mode accepts / rejects

GOOD = {
    # silent_corruption: the seed through a .data alias
    "GG301": """\
import torch
x = torch.tensor([[1., 2.]])
w1 = torch.tensor([[2.], [1.]], requires_grad=True)
w2 = torch.tensor([3.], requires_grad=True)
d = torch.matmul(x, w1)
d_ = d.data
f = torch.matmul(d, w2)
d_[:] = 1  # expect: GG301
f.backward()
""",
    # equivalent_fix
    "GG302": """\
import torch
import torch.nn as nn
torch.manual_seed(0)
lin = nn.Linear(3, 2)
lin.bias.data.fill_(-4.6)  # expect: GG302
x = torch.randn(4, 3, requires_grad=True)
loss = lin(x).sum()
loss.backward()
for p in lin.parameters():
    p.data.add_(p.grad, alpha=-0.1)  # expect: GG302
""",
    # silent_change
    "GG303": """\
import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
h = w * 2
c = h.detach()
c.zero_()  # expect: GG303
y = (h * w).sum()
y.backward()
""",
    # raises_here
    "GG304": """\
import torch
w = torch.ones(3, requires_grad=True)
with torch.no_grad():
    loss = (w * 2).sum()
loss.backward()  # expect: GG304
""",
    # trains_nothing
    "GG304[trains_nothing]": """\
import torch
torch.manual_seed(0)
lin = torch.nn.Linear(3, 1)
with torch.no_grad():
    out = lin(torch.randn(4, 3))
loss = out.pow(2).mean()
loss = torch.tensor(loss.item(), requires_grad=True)  # expect: GG304[trains_nothing]
loss.backward()
""",
    # warns_here
    "GG305": """\
import torch
w = torch.ones(3, requires_grad=True)
h = w * 2
h.sum().backward()
print(w.grad)
print(h.grad)  # expect: GG305
""",
    "GG306": """\
import torch
w = torch.ones(4, requires_grad=True)
v = (w * 2)[:2]
v.detach_()  # expect: GG306
""",
    "GG306[raises_later]": """\
import torch
w = torch.ones(3, requires_grad=True)
h = w * 2
y = h * h
h.detach_()  # expect: GG306[raises_later]
y.sum().backward()
""",
    # no_gradient
    "GG307": """\
import torch
w = torch.ones(3, requires_grad=True)
b = torch.ones(3, requires_grad=True)
loss = (w * b).sum() + (w.data ** 2).sum()  # expect: GG307
loss.backward()
""",
    "GG308": """\
import torch
from torch.autograd import Variable
x = Variable(torch.ones(2), volatile=True)  # expect: GG308
y = x * 2
""",
    # legacy_noop
    "GG308[legacy_noop]": """\
import torch
from torch.autograd import Variable
w = torch.ones(2, requires_grad=True)
x = Variable(torch.ones(2))  # expect: GG308[legacy_noop]
(x * w).sum().backward()
""",
}


@pytest.mark.parametrize("key", sorted(GOOD))
def test_new_modes_accept_correct_annotations(key: str) -> None:
    v = verify_source(GOOD[key], FAKE_PATH)
    assert v.ok, v.report()


REJECT = [
    # GG301 silent_corruption
    ("GG301", ("d_[:] = 1  # expect: GG301", "d_[:] = 4  # expect: GG301"),
     "the write changes no value: no gradient differs"),
    ("GG301", ("d_ = d.data\n", "d_ = d.data.clone()\n"), "a write to a copy corrupts nothing"),
    ("GG301", ("f = torch.matmul(d, w2)\nd_[:] = 1  # expect: GG301\n",
               "d_[:] = 1  # expect: GG301\nf = torch.matmul(d, w2)\n"), "write before the op that saves d"),
    ("GG301", ("d_ = d.data\n", "d_ = d.data  # expect: GG301\n"),
     "alias line annotated too: cannot be neutralised on its own"),
    ("GG301", ("# expect: GG301", "# expect: GG302"), "a corrupting write is not GG302: the no_grad fix raises"),
    ("GG301", ("# expect: GG301", "# expect: GG201"), "torch raises nothing: not GG201"),
    ("GG301", ("f.backward()\n", "d.data.mul_(3)\nf.backward()\n"), "missing annotation: a second corrupting write"),
    # GG302 equivalent_fix
    ("GG302", ("loss.backward()\n", "lin.weight.data.mul_(2)  # expect: GG302\nloss.backward()\n"),
     "a write into a saved weight: the torch.no_grad() rewrite raises"),
    ("GG302", ("loss.backward()\n", "print(lin.weight.data.sum())  # expect: GG302\nloss.backward()\n"),
     "a .data read writes nothing"),
    ("GG302", ("loss = lin(x).sum()\n", "loss = lin(x).sum()  # expect: GG302\n"), "no .data on the line"),
    ("GG302", ("lin.bias.data.fill_(-4.6)  # expect: GG302", "lin.bias.data.fill_(-4.6)  # expect: GG301"),
     "nothing saved: not GG301"),
    # GG303 silent_change
    ("GG303", ("c = h.detach()\n", "c = h.detach().clone()\n"), "a write to a copy leaks nothing"),
    ("GG303", ("h = w * 2\n", "h = w.exp()\n"), "exp saved h: torch raises (GG201, not GG303)"),
    ("GG303", ("c.zero_()  # expect: GG303\ny = (h * w).sum()\ny.backward()\n",
               "y = (h * w).sum()\ny.backward()\nc.zero_()  # expect: GG303\n"), "nobody reads h after the write"),
    ("GG303", ("c.zero_()  # expect: GG303\n", "c.zero_()\nz = w + 1  # expect: GG303\n"),
     "innocent line, unannotated write"),
    # GG304 raises_here
    ("GG304", ("with torch.no_grad():\n    loss = (w * 2).sum()\n", "loss = (w * 2).sum()\n"), "loss has a graph"),
    ("GG304", ("    loss = (w * 2).sum()\nloss.backward()  # expect: GG304\n",
               "    loss = (w * 2).sum()  # expect: GG304\nloss.backward()\n"), "raised on another line"),
    # GG304[trains_nothing]
    ("GG304[trains_nothing]", ("with torch.no_grad():\n    out = lin(torch.randn(4, 3))\n",
                               "out = lin(torch.randn(4, 3))\n"), "the loss had a graph: no error was silenced"),
    ("GG304[trains_nothing]", ("loss = torch.tensor(loss.item(), requires_grad=True)  # expect: GG304[trains_nothing]",
                               "loss = loss * 1  # expect: GG304[trains_nothing]"),
     "no re-wrap: the line silences nothing"),
    ("GG304[trains_nothing]", ("# expect: GG304[trains_nothing]", "# expect: GG304"),
     "runs clean: not the raising kind"),
    ("GG304[trains_nothing]", ("with torch.no_grad():\n    out = lin(torch.randn(4, 3))\nloss = out.pow(2).mean()\n",
                               "out = lin(torch.randn(4, 3))\nloss = out.pow(2).mean() + lin.weight.sum() * 0\n"),
     "the model would be trained (so nothing was silenced)"),
    ("GG304[trains_nothing]", ("loss.backward()\n", "loss.backward()\nlin(torch.randn(2, 3)).sum().backward()\n"),
     "another backward trains the model"),
    # GG305 warns_here
    ("GG305", ("print(w.grad)\nprint(h.grad)  # expect: GG305\n", "print(w.grad)  # expect: GG305\nprint(h.grad)\n"),
     "a leaf's .grad; and the real read is unannotated"),
    ("GG305", ("h.sum().backward()\n", "h.retain_grad()\nh.sum().backward()\n"), "retain_grad(): no warning"),
    ("GG305", ("print(h.grad)  # expect: GG305\n", "g = h.grad  # expect: GG305\nprint(g * 2)\n"),
     "the program fails on another line"),
    ("GG305", ("print(h.grad)  # expect: GG305\n", "print(h.grad)\n"), "missing annotation: the fixed run warns"),
    # GG306 raises_here / raises_later
    ("GG306", ("v = (w * 2)[:2]\n", "v = w * 2\n"), "not a view: detach_() is allowed"),
    ("GG306", ("# expect: GG306\n", "# expect: GG306[raises_later]\n"), "raised at once, with the other message"),
    ("GG306[raises_later]", ("h.detach_()  # expect: GG306[raises_later]\ny.sum().backward()\n",
                             "y.sum().backward()\nh.detach_()  # expect: GG306[raises_later]\n"),
     "detach_ after backward"),
    ("GG306[raises_later]", ("# expect: GG306[raises_later]", "# expect: GG306[no_gradient]"),
     "it raises: not a silent missing gradient"),
    # GG307 no_gradient
    ("GG307", ("loss = (w * b).sum() + (w.data ** 2).sum()  # expect: GG307\n",
               "loss = (w * b).sum()\nlogged = loss.detach()  # expect: GG307\n"), "a logged detach cuts nothing"),
    ("GG307", ("loss = (w * b).sum() + (w.data ** 2).sum()  # expect: GG307\n",
               "reg = (w.data ** 2).sum()  # expect: GG307\nloss = (w * b).sum()\n"),
     "term not in the backpropagated loss"),
    ("GG307", ("loss = (w * b).sum() + (w.data ** 2).sum()  # expect: GG307\n",
               "loss = (w * b).sum() + (w ** 2).sum()  # expect: GG307\n"), "nothing to remove"),
    # GG308 warns_here / legacy_noop
    ("GG308", (", volatile=True)", ")"), "no volatile: no warning"),
    ("GG308[legacy_noop]", ("x = Variable(torch.ones(2))", "x = Variable(w * 2)"),
     "Variable() of a tensor with history detaches it: not a no-op"),
    ("GG308[legacy_noop]", ("x = Variable(torch.ones(2))  # expect: GG308[legacy_noop]\n",
                            "x = Variable(torch.ones(2))\ny = x + 0  # expect: GG308[legacy_noop]\n"),
     "no Variable on the line"),
]


@pytest.mark.parametrize("key, mutation, why", REJECT, ids=[f"{k}: {w}" for k, _, w in REJECT])
def test_new_modes_reject_wrong_annotations(key: str, mutation: tuple[str, str], why: str) -> None:
    old, new = mutation
    good = GOOD[key]
    assert old in good, old
    bad = good.replace(old, new, 1)
    assert bad != good
    v = verify_source(bad, FAKE_PATH)
    assert not v.ok, f"oracle accepted a wrong annotation ({why}):\n{v.report()}"


def test_near_miss_that_warns_fails() -> None:
    src = "import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nh.sum().backward()\nprint(h.grad)\n"
    v = verify_source(src, FAKE_PATH)
    assert not v.ok and "must run without warnings" in v.problems[0], v.report()
    assert "not a leaf Tensor" in v.problems[0]


def test_near_miss_with_silent_data_corruption_fails() -> None:
    src = GOOD["GG301"].replace("  # expect: GG301", "")
    assert not parse_expectations(src)
    v = verify_source(src, FAKE_PATH)
    assert not v.ok and "`.data` -> `.detach()`" in v.problems[0], v.report()


def test_run_records_warnings_and_final_tensors() -> None:
    src = (
        "import torch\nimport torch.nn as nn\nm = nn.Linear(2, 1)\nw = torch.ones(2, requires_grad=True)\n"
        "h = w * 2\nh.sum().backward()\nh.grad\nxs = [w]\n"
    )
    r = run_source(src, FAKE_PATH, snapshot=True)
    assert r.exc is None
    assert [(w.lineno, w.category) for w in r.own_warnings] == [(7, UserWarning)]
    assert {"m.weight", "m.bias", "w", "h", "xs[0]"} <= r.state.keys()
    assert r.state["h"].grad is None and not r.state["h"].is_leaf
    assert torch.equal(r.state["w"].grad, torch.full((2,), 2.0))
    assert r.state["w"].storage == r.state["xs[0]"].storage


# --------------------------------------------------------------------------- folder fixtures


def _folder(tmp_path: Path, files: dict[str, str], name: str = "bug_program") -> Path:
    """A folder fixture under ``tmp_path``: {name in the folder: source}."""
    root = tmp_path / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


HELPERS = """\
import torch


def update(w):
    w.mul_(2)  # expect: GG101


def noop(w):
    return w + 1


def scale_(x):
    x.mul_(2)  # expect: GG201
    return x
"""

MAIN_OK = """\
import torch
from helpers import update, noop, scale_

w = torch.ones(3, requires_grad=True)
update(w)
noop(w)
a = torch.ones(3, requires_grad=True)
h = torch.sigmoid(a)
scale_(h)
h.sum().backward()
"""


def test_folder_accepts_annotations_in_any_file(tmp_path: Path) -> None:
    v = oracle.verify_file(_folder(tmp_path, {"main.py": MAIN_OK, "helpers.py": HELPERS}))
    assert v.ok, v.report()
    assert v.expectations == {("helpers.py", 5): {"GG101"}, ("helpers.py", 13): {"GG201"}}
    assert "helpers.py:5 only" in v.report() and "raised RuntimeError at helpers.py:5" in v.report()


def test_folder_rejects_a_line_that_does_not_raise_in_another_file(tmp_path: Path) -> None:
    helpers = HELPERS.replace("    return w + 1\n", "    return w + 1  # expect: GG101\n")
    v = oracle.verify_file(_folder(tmp_path, {"main.py": MAIN_OK, "helpers.py": helpers}))
    assert not v.ok
    assert any(p.startswith("helpers.py:9 [GG101]: expected RuntimeError") for p in v.problems), v.report()


def test_folder_raises_here_compares_the_file_too(tmp_path: Path) -> None:
    # The call site in main.py is on line 5, like the raising write in helpers.py: the
    # innermost frame is helpers.py:5, so an annotation on main.py:5 is the wrong place.
    helpers = HELPERS.replace("    w.mul_(2)  # expect: GG101\n", "    w.mul_(2)\n")
    main = MAIN_OK.replace("update(w)\n", "update(w)  # expect: GG101\n")
    assert main.splitlines()[4].startswith("update(w)") and helpers.splitlines()[4] == "    w.mul_(2)"
    v = oracle.verify_file(_folder(tmp_path, {"main.py": main, "helpers.py": helpers}))
    assert not v.ok
    assert any("raised at helpers.py:5, not at main.py:5" in p for p in v.problems), v.report()


def test_folder_rejects_a_missing_annotation_in_another_file(tmp_path: Path) -> None:
    helpers = HELPERS.replace("    x.mul_(2)  # expect: GG201\n", "    x.mul_(2)\n")
    v = oracle.verify_file(_folder(tmp_path, {"main.py": MAIN_OK, "helpers.py": helpers}))
    assert not v.ok and any("every annotated line fixed" in p for p in v.problems), v.report()


def test_folder_near_miss_that_raises_fails(tmp_path: Path) -> None:
    helpers = HELPERS.replace("  # expect: GG101", "").replace("  # expect: GG201", "")
    v = oracle.verify_file(_folder(tmp_path, {"main.py": MAIN_OK, "helpers.py": helpers}, name="ok_program"))
    assert not v.ok and "near-miss must run clean but raised RuntimeError at helpers.py:5" in v.problems[0], v.report()


def test_folder_warns_here_in_a_subpackage(tmp_path: Path) -> None:
    files = {
        "main.py": "import torch\nfrom pkg import show\nw = torch.ones(2, requires_grad=True)\n"
                   "h = w * 2\nh.sum().backward()\nshow(h)\n",
        "pkg/__init__.py": "from .log import show\n",
        "pkg/log.py": "def show(h):\n    print(h.grad)  # expect: GG305\n",
    }
    v = oracle.verify_file(_folder(tmp_path, files))
    assert v.ok, v.report()
    assert v.expectations == {("pkg/log.py", 2): {"GG305"}}
    files["pkg/log.py"] = "def show(h):\n    print(h.grad)\n"
    v = oracle.verify_file(_folder(tmp_path, files, name="ok_program"))
    assert not v.ok and "must run without warnings" in v.problems[0], v.report()


def test_folder_runs_import_the_files_as_rewritten_and_leave_no_module_behind(tmp_path: Path) -> None:
    main = "from models import VALUE\nassert VALUE == 2, VALUE\n"
    assert oracle.verify_file(_folder(tmp_path, {"main.py": main, "models.py": "VALUE = 2\n"}, "ok_a")).ok
    v = oracle.verify_file(_folder(tmp_path, {"main.py": main, "models.py": "VALUE = 3\n"}, "ok_b"))
    assert not v.ok and "AssertionError" in v.problems[0], v.report()  # not the first run's models
    assert "models" not in sys.modules and not any("gradguard-fixture-" in p for p in sys.path)


def test_folder_layout_problems(tmp_path: Path) -> None:
    v = oracle.verify_file(_folder(tmp_path, {"models.py": "x = 1\n"}, "ok_no_main"))
    assert not v.ok and "main.py" in v.problems[0]
    v = oracle.verify_file(_folder(tmp_path, {"main.py": "import copy\n", "copy.py": "x = 1\n"}, "ok_shadow"))
    assert not v.ok and "shadow the standard library" in v.problems[0]


def test_fixture_files_lists_files_and_folders() -> None:
    folders = [p for p in FIXTURES if p.is_dir()]
    assert folders and all((p / oracle.MAIN).is_file() for p in folders)
    assert all(p.suffix == ".py" for p in FIXTURES if not p.is_dir())


# Every mode works on a folder the way it does on a file: each GOOD program, as the main.py
# of a folder that also imports a module of its own, is accepted; each REJECT mutation rejected.

def _as_folder(tmp_path: Path, source: str) -> Path:
    return _folder(tmp_path, {"main.py": "import helpers\n" + source, "helpers.py": "SCALE = 2\n"})


@pytest.mark.parametrize("key", sorted(GOOD))
def test_every_mode_accepts_correct_annotations_in_a_folder(key: str, tmp_path: Path) -> None:
    v = oracle.verify_file(_as_folder(tmp_path, GOOD[key]))
    assert v.ok, v.report()


@pytest.mark.parametrize("key, mutation, why", REJECT, ids=[f"{k}: {w}" for k, _, w in REJECT])
def test_every_mode_rejects_wrong_annotations_in_a_folder(key: str, mutation: tuple[str, str], why: str,
                                                          tmp_path: Path) -> None:
    old, new = mutation
    v = oracle.verify_file(_as_folder(tmp_path, GOOD[key].replace(old, new, 1)))
    assert not v.ok, f"oracle accepted a wrong annotation ({why}):\n{v.report()}"
