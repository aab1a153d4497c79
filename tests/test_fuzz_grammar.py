"""Grammar fuzzing: whatever Python hypothesmith writes, and whatever bytes a broken file
holds, gradguard gives findings or a diagnostic (GG001 syntax, GG002 decoding), never an
exception, a hang or GG003 (an internal error).

The normal run is bounded (a few seconds); ``GRADGUARD_FUZZ=N`` makes every loop and every
hypothesis search N cases long. Searches are derandomized, so a failure replays.
"""

from __future__ import annotations

import os
import random
import signal
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

hypothesmith = pytest.importorskip("hypothesmith")
# the grammar writes what CPython warns about (an int called): not this test's business
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

from click.testing import CliRunner  # noqa: E402 - after the importorskip
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gradguard.analysis.checker import check_source  # noqa: E402
from gradguard.frontends import cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COUNT = int(os.environ.get("GRADGUARD_FUZZ", 0))
EXAMPLES = COUNT or 100  # hypothesis programs per search
MUTANTS = COUNT or 300  # broken files
SECONDS = 20  # for any one file: more is a hang
INTERNAL_ERROR = "GG003"
DIAGNOSTICS = {"GG001", "GG002"}

SEARCH = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))

# Lines that make the engine work on whatever hypothesmith wrote around them: a leaf, a
# saved tensor, in-place writes, .data, a layer, a step, a backward.
PREAMBLE = """import torch
import torch.nn as nn
w = torch.zeros(3, requires_grad=True)
h = w.sigmoid()
"""
TORCH_LINES = [
    "w.mul_(2)", "h.add_(1)", "h.data.zero_()", "w.data = h", "v = w.detach(); v += 1",
    "w[0] = 1", "with torch.no_grad():\n    w -= 0.1", "h = nn.ReLU(inplace=True)(h)",
    "opt = torch.optim.SGD([w], lr=0.1); opt.step()", "h.sum().backward()",
    "for _ in range(2):\n    h = h * w", "def f(x):\n    x.mul_(2)\n    return x\nf(h)",
]


@contextmanager
def time_limit(seconds: int = SECONDS):
    """Fail (TimeoutError) if the block runs longer than ``seconds``: a hang is a bug."""

    def expire(signum, frame):
        raise TimeoutError(f"gradguard ran over {seconds} s on one file")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def lint(source: str | bytes) -> set[str]:
    """The codes gradguard reports on ``source``; fails on an exception, a hang or GG003,
    and on a syntax error reported in a file CPython accepts (libcst's limits are not the
    file's: that one is "not linted")."""
    with time_limit(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        findings = check_source(source, "fuzzed.py")
        valid = compiles(source)
    codes = {finding.code for finding in findings}
    assert INTERNAL_ERROR not in codes, [f.format() for f in findings if f.code == INTERNAL_ERROR]
    if valid:
        assert all(f.message.startswith("not linted: Python accepts") for f in findings
                   if f.code == "GG001"), [f.format() for f in findings]
    return codes


def compiles(source: str | bytes) -> bool:
    try:
        compile(source, "fuzzed.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def with_torch_lines(program: str, lines: list[str]) -> str:
    """``program`` between the torch preamble and some torch lines, so that the engine has
    tensors to follow through whatever the program does."""
    return PREAMBLE + program + "\n" + "\n".join(lines) + "\n"


@SEARCH
@given(hypothesmith.from_grammar())
def test_any_program_of_the_grammar_is_linted(program: str) -> None:
    assert not lint(program) & {"GG002"}  # the grammar's programs decode


@SEARCH
@given(hypothesmith.from_node())
def test_any_program_libcst_can_build_is_linted(program: str) -> None:
    assert "GG002" not in lint(program)  # (libcst may not parse all it writes: GG001)


@SEARCH
@given(hypothesmith.from_grammar(), st.lists(st.sampled_from(TORCH_LINES), max_size=6))
def test_generated_programs_around_torch_code_are_linted(program: str, lines: list) -> None:
    lint(with_torch_lines(program, lines))


def real_files() -> list[Path]:
    """The repository's own Python: fixtures and the linter."""
    return sorted(p for folder in ("fixtures", "lint") for p in (ROOT / folder).rglob("*.py"))


def mutants(rng: random.Random, files: list[Path], count: int):
    """``count`` broken files: random bytes, truncations and byte flips of real ones."""
    for index in range(count):
        kind = index % 3
        if kind == 0:
            yield "random bytes", rng.randbytes(rng.randint(0, 400))
            continue
        data = rng.choice(files).read_bytes()
        if kind == 1:
            yield "truncated", data[: rng.randint(0, len(data))]
        else:
            flipped = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                if flipped:
                    flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            yield "flipped", bytes(flipped)


def test_broken_files_give_a_diagnostic_or_findings_never_an_error() -> None:
    rng = random.Random(0)
    seen = set()
    for kind, data in mutants(rng, real_files(), MUTANTS):
        codes = lint(data)
        seen |= codes & DIAGNOSTICS
        if kind == "random bytes" and b"\0" in data:
            assert codes & DIAGNOSTICS, data  # CPython rejects a null byte
    assert seen == DIAGNOSTICS  # both diagnostics were met: the mutants are hostile enough


@settings(max_examples=min(EXAMPLES, 40), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar(), st.lists(st.sampled_from(TORCH_LINES), max_size=4))
def test_the_command_line_exits_truthfully(program: str, lines: list) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.py"
        path.write_text(with_torch_lines(program, lines), encoding="utf-8")
        with time_limit():
            result = CliRunner().invoke(cli.main, ["check", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output and INTERNAL_ERROR not in result.output
