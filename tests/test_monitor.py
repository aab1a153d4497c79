"""The runtime monitor (gradguard.verify.monitor) against the fixtures, and its manners.

Every fixture under fixtures/GG1*, GG2*, GG3* runs in-process under ``run_path``:

* a bug fixture is run once per annotated line, as the oracle proves it: the *base*
  program for a line has every other annotated line fixed (``oracle.apply_fixes``:
  neutralised, or rewritten the way its expectation says), so a line after one where torch
  raises is reached too. The monitor must report each annotated (line, code) whose code it
  monitors, exactly (same line, same code). Then, with every annotated line fixed, it must
  report nothing of the fixture's family (lines left as written by their fix excepted);
* a near-miss (no annotations) must produce no event of its family's monitored codes.

"Family" follows tests/test_fixtures.py: fixtures/GG2xx checks GG2 codes plus any code
the file annotates (a GG302 on a GG101 near-miss's deliberate ``x.data *= 100`` is GG302's
business, and indeed the monitor reports it there).

Folder fixtures (``main.py`` plus the modules it imports) run the same way: the program is
``oracle.installed`` in a temporary directory (first on ``sys.path``, its modules imported
afresh) and ``main.py`` runs under ``run_path``. The monitor attributes an event to the
innermost frame in *any* user file, so events are compared as (file in the folder, line,
code), and an annotation in ``models.py`` is matched by an event there.

Codes the monitor does not watch are listed, with the reason, in ``NOT_MONITORED``.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradguard.verify.monitor import MONITORED_CODES, Monitor, run_path  # noqa: E402
from oracle import (  # noqa: E402
    EXPECTATIONS,
    FIXTURES_DIR,
    Program,
    _torch_state_restored,
    fix_of,
    fixture_files,
    installed,
    models_of_missing_libraries,
    program_argv,
    state_diff,
)

NOT_MONITORED = {
    "GG307": "a term cut off from autograd (`.detach()`/`.data` in a loss term) raises and warns nothing; "
             "proving it needs a second, counterfactual run, which a monitor watching one run cannot do",
    "GG308": "the legacy `Variable(...)` API is a no-op (or an ignored `volatile=`), not a runtime hazard",
    "GG309": "a `.detach()` alias read after a write into its original raises and warns nothing: "
             "it reads the new values, and only a counterfactual `.clone()` run shows the difference",
    "GG310": "`torch.tensor(...)` of tensors that require grad only warns where it copies; whether the copy "
             "cut a gradient a loss needed takes a second, counterfactual run (as GG307)",
    "GG105": "a deepcopy that torch refuses raises in `Tensor.__deepcopy__`, which the monitor does not "
             "watch yet; the oracle proves each GG105 fixture by the error itself",
}

# Bugs whose hazard the monitor knowingly does not see, each with the reason. Strict: the
# day it sees one, the test fails until the entry is removed.
MONITOR_MISSES = {
    "GG304/bug_rewrap_thresholded_mask_in_dice_loss.py":
        "the loss is computed from the re-wrapped leaf, not the leaf itself: telling a mask "
        "cut by a comparison from an input made to require grad on purpose (style transfer, "
        "adversarial examples) takes the graph that made it, which a monitor does not keep",
    "GG201/bug_mmcv_conv_module_preactivation_inplace.py":
        "the in-place activation is built inside the library (its model): the linter places it "
        "at the user's call that built it, the monitor at the line that runs the block",
    "GG201/bug_torchvision_mlp_inplace_dropout.py":
        "the in-place dropout is built inside the library (its model): the linter places it "
        "at the user's call that built it, the monitor at the line that runs the block",
    "GG311/bug_hypernetwork_weights_wrapped_in_parameter.py":
        "nn.Parameter(t) makes its leaf through Tensor._make_subclass, which no torch "
        "function mode sees: the monitor reports the generator's parameters at the step as "
        "used but unreached, not at the re-wrap",
}
FIXTURES = [p for p in fixture_files() if p.parent.name.startswith(("GG1", "GG2", "GG3"))]


def _rel(path: Path) -> str:
    return path.relative_to(FIXTURES_DIR).as_posix()


def _family(path: Path) -> str:
    return path.parent.name[:3]


def _run(program: Program) -> tuple[dict[tuple[str, int, str], str], BaseException | None]:
    """Run ``program`` as a script (a folder: its main.py) under the monitor: the events in
    the program's files ({(file, line, code): message}) and the error it ended with. Global
    torch state is put back."""
    out = io.StringIO()
    with installed(program) as (main, names), _torch_state_restored(), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out), warnings.catch_warnings(), \
            models_of_missing_libraries(Path(main).read_text()):
        warnings.simplefilter("ignore")
        events, error = run_path(main, [main, *program_argv(Path(main).read_text())])
    torch.set_grad_enabled(True)
    return {(names[e.file], e.line, e.code): e.message for e in events if e.file in names}, error


# --------------------------------------------------------------------------- the fixtures


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) > 100
    assert any(p.is_dir() for p in FIXTURES)


def test_every_annotated_code_is_monitored_or_listed() -> None:
    codes = set()
    for path in FIXTURES:
        for found in Program.load(path).expectations().values():
            codes |= found
    assert codes <= MONITORED_CODES | NOT_MONITORED.keys(), codes - MONITORED_CODES - NOT_MONITORED.keys()
    assert not MONITORED_CODES & NOT_MONITORED.keys()


def _known_miss(path: Path) -> list:
    reason = MONITOR_MISSES.get(_rel(path))
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("path", [pytest.param(p, marks=_known_miss(p), id=_rel(p))
                                  for p in FIXTURES])
def test_monitor_reports_the_annotations(path: Path) -> None:
    program = Program.load(path)
    annotations = program.annotations()
    expected = program.expectations()
    family = _family(path)

    def family_events(got: dict, allowed=frozenset()) -> set:
        annotated = {code for codes in expected.values() for code in codes}
        return {(name, line, code) for name, line, code in got
                if code in MONITORED_CODES and (code.startswith(family) or code in annotated)
                and (name, line) not in allowed}

    if not annotations:
        got, _ = _run(program)
        false = family_events(got)
        assert not false, f"{_rel(path)}: events on a near-miss: " + "; ".join(
            f"{name}:{line} {code} {got[name, line, code]}" for name, line, code in sorted(false))
        return

    missing = []
    for loc in sorted(annotations):
        wanted = expected[loc] & MONITORED_CODES
        if not wanted:
            continue
        got, error = _run(program.fixed(annotations, set(annotations) - {loc}))
        for code in sorted(wanted):
            if (*loc, code) not in got:
                missing.append(f"{program.where(loc)} {code}: not reported (events {sorted(got)}, "
                               f"ended with {type(error).__name__ if error else 'no error'})")
    assert not missing, f"{_rel(path)}:\n  " + "\n  ".join(missing)

    # every annotated line fixed: nothing of the family may remain (a line left as written
    # by its fix, GG304[trains_nothing]'s re-wrap, still is what it was)
    as_written = {loc for loc, keys in annotations.items()
                  if any(fix_of(EXPECTATIONS[key]) == "as_written" for key in keys)}
    got, _ = _run(program.fixed(annotations, set(annotations)))
    assert not family_events(got, as_written), f"{_rel(path)}: events with every annotated line fixed"


def _variants(path: Path) -> list[tuple[str, Program]]:
    program = Program.load(path)
    annotations = program.annotations()
    return [("as written", program)] + [
        (f"{program.where(loc)} only", program.fixed(annotations, set(annotations) - {loc}))
        for loc in sorted(annotations)]


@pytest.mark.parametrize("path", FIXTURES, ids=_rel)
def test_monitor_changes_nothing_the_program_sees(path: Path) -> None:
    """With and without the monitor: the same exception (type, message head, line), the same
    warnings attributed to the program, the same final tensors and gradients."""
    for name, program in _variants(path):
        try:
            plain = program.run(snapshot=True)
            snapshot = True
        except RuntimeError:  # the oracle cannot read some final tensor (a forbidden view)
            plain, snapshot = program.run(), False
        with Monitor():
            watched = program.run(snapshot=snapshot)

        def outcome(r):
            if r.exc is None:
                return None
            return type(r.exc).__name__, str(r.exc).split(":")[0][:120], r.frame

        assert outcome(plain) == outcome(watched), f"{_rel(path)} ({name})"
        assert [w.describe() for w in plain.own_warnings] == [w.describe() for w in watched.own_warnings], \
            f"{_rel(path)} ({name})"
        if snapshot and plain.exc is None:  # (a raising run may leave torch.empty() garbage behind)
            assert not state_diff(plain.state, watched.state, requires_grad=True), f"{_rel(path)} ({name})"


# --------------------------------------------------------------------------- manners


def _global_state() -> dict:
    return {
        "function modes": torch._C._len_torch_function_stack(),
        "saved tensor hooks": torch._C._autograd._top_saved_tensors_default_hooks(False),
        "grad": torch.is_grad_enabled(),
        "filters": list(warnings.filters),
        "showwarning": warnings.showwarning,
        "formatwarning": warnings.formatwarning,
        "layers' __setattr__": {layer: layer.__setattr__
                                for layer in (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.Dropout2d)},
    }


def _line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``# marker``."""
    [line] = [n for n, source in enumerate(Path(__file__).read_text().splitlines(), 1)
              if source.endswith(f"# {marker}")]
    return line


def test_a_layers_write_is_reported_where_the_user_turned_its_flag_on(tmp_path, monkeypatch) -> None:
    """Built by the user: at the constructor (or at ``act.inplace = True``); built by a
    library for the user: at the user's call, since the library's line is not the user's."""
    (tmp_path / "gg_flag_lib.py").write_text(
        "import torch.nn as nn\n\n\ndef head():\n    return nn.Sequential(nn.Sigmoid(), nn.ReLU(inplace=True))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import gg_flag_lib

    def here(filename: str) -> bool:
        return filename == __file__

    def mine():
        return torch.nn.Sequential(torch.nn.Sigmoid(), torch.nn.ReLU(True))  # built here

    for build, marker in ((mine, "built here"), (gg_flag_lib.head, "runs the layers")):
        with Monitor(user_files=here) as watch:
            net = build()
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                net(torch.randn(3, requires_grad=True)).sum().backward()  # runs the layers
        assert [(e.code, e.line) for e in watch.events] == [("GG201", _line_of(marker))], marker
    relu = torch.nn.ReLU()
    with Monitor(user_files=here) as watch:
        relu.inplace = True  # set here
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            relu(torch.randn(3, requires_grad=True).sigmoid()).sum().backward()
    assert [(e.code, e.line) for e in watch.events] == [("GG201", _line_of("set here"))]


def test_monitor_restores_global_state() -> None:
    before = _global_state()
    monitor = Monitor()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        with monitor:
            assert _global_state() != before
            w = torch.ones(3, requires_grad=True)
            a = w.sigmoid()
            with pytest.warns(UserWarning, match="not a leaf Tensor") as caught:
                _ = a.grad  # the non-leaf .grad read: torch's warning still points here
            assert caught[0].filename == __file__ and "a.grad" in Path(__file__).read_text().splitlines()[
                caught[0].lineno - 1]
            w.mul_(2)  # GG101: torch raises
    assert [e.code for e in monitor.events] == ["GG305", "GG101"]
    assert _global_state() == before
    # after exit nothing is watched any more, and torch checks saved tensors itself again
    count = len(monitor.events)
    b = w.exp()
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
    with pytest.raises(RuntimeError):
        w.mul_(2)
    assert len(monitor.events) == count
    with Monitor() as again:  # can be used again after another one
        pass
    assert again.events == [] and _global_state() == before


def test_run_path_restores_argv_and_grad_mode(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("import sys, torch\nassert sys.argv[1:] == ['--x']\n"
                      "torch.set_grad_enabled(False)\nsys.exit(0)\n")
    argv = list(__import__("sys").argv)
    events, error = run_path(str(script), ["prog.py", "--x"])
    assert (events, error) == ([], None)
    assert __import__("sys").argv == argv and torch.is_grad_enabled()
    script.write_text("import sys\nsys.exit(3)\n")
    _, error = run_path(str(script), ["prog.py"])
    assert isinstance(error, SystemExit) and error.code == 3
    script.write_text("raise ValueError('boom')\n")
    _, error = run_path(str(script), ["prog.py"])
    assert isinstance(error, ValueError)


def test_an_event_names_the_saving_line(tmp_path: Path) -> None:
    script = tmp_path / "seed.py"
    script.write_text(
        "import torch\n"
        "x = torch.ones(1, 2)\n"
        "w1 = torch.ones(2, 1, requires_grad=True)\n"
        "w2 = torch.ones(1, requires_grad=True)\n"
        "d = torch.matmul(x, w1)\n"
        "f = torch.matmul(d, w2)\n"  # saves d
        "d[:] = 1\n"
        "f.backward()\n")
    events, error = run_path(str(script), [str(script)])
    assert isinstance(error, RuntimeError) and "modified by an inplace operation" in str(error)
    assert [(e.code, e.line, e.related_line) for e in events] == [("GG201", 7, 6)]
    assert events[0].file == str(script) and "matmul" in events[0].message


def _train(steps: int = 30, monitored: bool = False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(inplace=True), torch.nn.Dropout(0.2),
                                torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(32, 5), torch.randn(32, 1)
    losses = []
    context = Monitor() if monitored else contextlib.nullcontext()
    with context:
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return [p.detach().clone() for p in model.parameters()], [p.grad.clone() for p in model.parameters()], \
        losses, getattr(context, "events", [])


def test_monitor_does_not_change_results() -> None:
    params, grads, losses, _ = _train()
    params2, grads2, losses2, events = _train(monitored=True)
    assert events == []
    assert losses == losses2
    assert all(torch.equal(a, b) for a, b in zip(params, params2))
    assert all(torch.equal(a, b) for a, b in zip(grads, grads2))


def test_saved_records_die_with_their_graph() -> None:
    """The monitor keeps no graph alive: records go when backward frees them or the graph
    dies (a saved *output* is held as an alias, so there is no cycle through its grad_fn)."""
    a = torch.randn(100, requires_grad=True)
    with Monitor() as monitor:
        for _ in range(20):
            b = a.sigmoid()
            c = torch.relu((b * a).exp())
        assert 0 < sum(map(len, monitor._saved.values())) <= 5  # only the last graph's
        del b, c
        assert monitor._saved == {}
        (torch.tanh(a) * a).sum().backward()
        assert monitor._saved == {}


def test_a_saved_input_is_kept_as_torch_keeps_it() -> None:
    """``x.data = y`` between forward and backward: torch's backward sees the new storage of
    a saved input (a silent change); under the monitor too."""
    def program():
        x, w = torch.ones(3), torch.ones(3, requires_grad=True)
        y = (x * w).sum()
        x.data = torch.full((3,), 5.0)
        y.backward()
        return w.grad

    plain = program()
    with Monitor() as monitor:
        watched = program()
    assert torch.equal(plain, watched)
    assert [e.code for e in monitor.events] == ["GG302"]


def _loop(steps: int = 200) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def test_monitor_overhead_on_a_training_loop() -> None:
    """200 steps of a 2-layer MLP: about 2x with the monitor here; fail only far above."""
    def best(fn) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    def watched() -> None:
        with Monitor() as monitor:
            _loop()
        assert monitor.events == []

    _loop(5)
    watched()
    ratio = best(watched) / best(_loop)
    print(f"monitor overhead: {ratio:.2f}x")
    assert ratio < 10


# --------------------------------------------------------------------------- custom Functions


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class _Double(torch.autograd.Function):
    """Doubles its input in place (mark_dirty) and saves it: the saved tensor is its output."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * 2 + 0 * y


def test_function_saves_die_with_their_graph() -> None:
    """ctx.save_for_backward's records go with their graph too: a saved input, a saved output
    (the input mark_dirty moved onto the Function's node) and an input that another
    Function made."""
    a = torch.randn(5, requires_grad=True)
    with Monitor() as monitor:
        for _ in range(10):
            s = _Square.apply(_Square.apply(a * 1))
            d = _Double.apply(s * 1)
        assert 0 < sum(map(len, monitor._saved.values())) <= 6
        records = [ref() for bucket in monitor._saved.values() for ref in bucket.values()]
        assert sorted((r.function, r.is_output) for r in records) == [
            ("_Double", True), ("_Square", False), ("_Square", False)]
        del s, d, records
        assert monitor._saved == {}
        _Double.apply(_Square.apply(a * 1) * 1).sum().backward()
        assert monitor._saved == {}
    assert monitor.events == []


def test_a_function_saved_input_is_kept_as_torch_keeps_it() -> None:
    """A Function saved an input another Function made: ``detach_()`` of it does not fail
    the Function's backward (unlike an op's), and ``x.data = y`` changes what it computes,
    with and without the monitor."""
    def detached():
        a = torch.randn(4, requires_grad=True, generator=torch.Generator().manual_seed(0))
        h = _Square.apply(a)
        y = _Square.apply(h)
        h.detach_()
        y.sum().backward()
        return a.grad

    plain = detached()
    with Monitor() as monitor:
        watched = detached()
    assert torch.equal(plain, watched) and monitor.events == []

    def swapped():
        w = torch.ones(3, requires_grad=True)
        h = _Square.apply(w)
        y = _Square.apply(h)
        h.data = torch.full((3,), 5.0)
        y.sum().backward()
        return w.grad

    plain = swapped()
    with Monitor() as monitor:
        watched = swapped()
    assert torch.equal(plain, watched) and torch.equal(plain, torch.full((3,), 20.0))
    assert [e.code for e in monitor.events] == ["GG302"]


def test_data_assignment_suggests_copy_only_when_it_is_the_same() -> None:
    """``x.data = y`` is ``copy_`` under ``no_grad`` only when ``y`` has ``x``'s shape, dtype
    and device: the monitor, which sees both, suggests ``copy_`` then and a rebinding else."""
    def program():
        w = torch.nn.Parameter(torch.ones(3))
        w.data = torch.zeros(3)
        v = torch.nn.Parameter(torch.ones(3))
        v.data = torch.zeros(2)
        u = torch.nn.Parameter(torch.ones(3))
        u.data = torch.zeros(3, dtype=torch.float64)

    with Monitor() as monitor:
        program()
    messages = [e.message for e in sorted(monitor.events, key=lambda e: e.line)]
    assert [e.code for e in monitor.events] == ["GG302"] * 3
    assert "use `with torch.no_grad(): x.copy_(y)`" in messages[0]
    assert all("copy_` needs the same shape, dtype and device: rebind x" in m
               for m in messages[1:])


def test_function_codes_follow_the_linters_precedence(tmp_path: Path) -> None:
    """A parameter update into what ctx.save_for_backward saved is GG206, not GG202; a write
    inside a forward into a Function's save is GG204, not GG206."""
    script = tmp_path / "fn.py"
    script.write_text(
        "import torch\n"
        "class Lin(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, w):\n"
        "        ctx.save_for_backward(x, w)\n"
        "        return x * w\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        x, w = ctx.saved_tensors\n"
        "        return g * w, g * x\n"
        "class Bump(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        x.add_(1)\n"
        "        return x.clone()\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "x = torch.ones(3)\n"
        "y = Lin.apply(x, w)\n"
        "with torch.no_grad():\n"
        "    w.sub_(0.1)\n"
        "Bump.apply(x)\n"
        "y.sum().backward()\n")
    events, error = run_path(str(script), [str(script)])
    assert isinstance(error, RuntimeError) and "modified by an inplace operation" in str(error)
    assert sorted((e.code, e.line, e.related_line) for e in events) == [("GG204", 14, 21), ("GG206", 23, 21)]
