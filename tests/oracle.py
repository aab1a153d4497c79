"""The oracle: torch itself proves every ``# expect:`` annotation in ``fixtures/``.

A fixture is a small runnable program.  Lines that the linter must report carry a
trailing ``# expect: GG101`` comment (several codes comma-separated).  A fixture
without annotations is a near-miss and must run clean.  For a bug fixture, every
annotated line must *independently* make torch fail, and neutralising all of them
(replacing each statement by ``pass``) must make the program run clean.

How a code is proven is looked up in ``EXPECTATIONS`` (code -> ``Expectation``):

* mode ``"raises_here"``: with every *other* annotated statement neutralised, the
  program raises an exception of the expected type and message, and the innermost
  traceback frame inside the fixture file is the annotated line (torch raised "at once").
* mode ``"raises_later"``: with every other annotated statement neutralised, the
  program raises the expected error *somewhere* (typically at ``backward()``); the
  line is proven to be the cause by the all-neutralised run being clean.

The annotation parser (``parse_expectations``) does not need torch, so the linter
tests (tests/test_fixtures.py) can use it where torch is not installed.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
import tokenize
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

try:
    import torch
except ImportError:  # only the parser is usable without torch
    torch = None

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES_DIR = REPO_ROOT / "fixtures"


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Expectation:
    """How torch must fail for an annotated line with this code."""

    code: str
    mode: str  # "raises_here" | "raises_later"
    exc_type: type[BaseException]
    contains: str  # the message must contain this
    excludes: tuple[str, ...] = ()  # ... and none of these (GG101's text is inside GG102's)

    def matches(self, exc: BaseException) -> bool:
        msg = str(exc)
        return (
            isinstance(exc, self.exc_type)
            and self.contains in msg
            and not any(x in msg for x in self.excludes)
        )

    def describe(self) -> str:
        extra = "".join(f" and not {x!r}" for x in self.excludes)
        return f"{self.exc_type.__name__} containing {self.contains!r}{extra}"


MODES = ("raises_here", "raises_later")

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_OF_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation"

EXPECTATIONS: dict[str, Expectation] = {}


def register(exp: Expectation) -> Expectation:
    if exp.mode not in MODES:
        raise ValueError(f"unknown oracle mode {exp.mode!r}; expected one of {MODES}")
    EXPECTATIONS[exp.code] = exp
    return exp


register(Expectation("GG101", "raises_here", RuntimeError, LEAF_MSG, excludes=("a view of " + LEAF_MSG,)))
register(Expectation("GG102", "raises_here", RuntimeError, VIEW_OF_LEAF_MSG))

SAVED_TENSOR_MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"
MULTI_OUTPUT_VIEW_MSG = (
    "is a view and is being modified inplace. This view is the output of a function that returns multiple views"
)

register(Expectation("GG201", "raises_later", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG202", "raises_later", RuntimeError, SAVED_TENSOR_MSG))
register(Expectation("GG203", "raises_here", RuntimeError, MULTI_OUTPUT_VIEW_MSG))


# --------------------------------------------------------------------------- parsing

_EXPECT_RE = re.compile(r"\bexpect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def parse_expectations(source: str | bytes) -> dict[int, set[str]]:
    """Map line number -> set of codes, from ``# expect: CODE[, CODE...]`` comments.

    Uses ``tokenize`` so a ``#`` inside a string literal is never mistaken for a comment.
    """
    if isinstance(source, str):
        source = source.encode("utf-8")
    result: dict[int, set[str]] = {}
    for tok in tokenize.tokenize(io.BytesIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        m = _EXPECT_RE.search(tok.string)
        if m:
            codes = {c.strip() for c in m.group(1).split(",")}
            result.setdefault(tok.start[0], set()).update(codes)
    return result


# --------------------------------------------------------------------------- neutralising


class OracleError(Exception):
    """The fixture is malformed, or torch does not back up its annotations."""


def _simple_statements(tree: ast.AST) -> list[ast.stmt]:
    compound = (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
        ast.While, ast.With, ast.AsyncWith, ast.Try,
    ) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.Match,) if hasattr(ast, "Match") else ())
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not isinstance(n, compound)]


def neutralise(source: str, lines: set[int] | frozenset[int]) -> str:
    """Replace every simple statement whose span contains one of ``lines`` by ``pass``.

    Only the statement's own text is replaced (so ``if c: w.mul_(2)`` becomes
    ``if c: pass`` and indentation is untouched); a statement spanning k extra lines
    becomes ``pass`` followed by k backslash-continued blank lines, so every line
    number in the program stays the same.
    """
    if not source.endswith("\n"):
        source += "\n"
    tree = ast.parse(source)
    stmts = _simple_statements(tree)
    targets: list[ast.stmt] = []
    for line in sorted(lines):
        hit = [s for s in stmts if s.lineno <= line <= s.end_lineno]
        if not hit:
            raise OracleError(f"line {line}: annotation is not on a simple statement")
        targets.extend(s for s in hit if s not in targets)

    # ast columns are UTF-8 byte offsets: edit the lines as bytes.
    blines = [ln.encode("utf-8") for ln in source.splitlines(keepends=True)]
    for s in sorted(targets, key=lambda s: (s.lineno, s.col_offset), reverse=True):
        first, last = s.lineno - 1, s.end_lineno - 1
        head = blines[first][: s.col_offset]
        tail = blines[last][s.end_col_offset :]
        replacement = b"pass" + b" \\\n" * (last - first)
        merged = (head + replacement + tail).splitlines(keepends=True)
        blines[first : last + 1] = merged
    out = b"".join(blines).decode("utf-8")
    assert out.count("\n") == source.count("\n"), "neutralising changed the line count"
    return out


# --------------------------------------------------------------------------- running


@dataclass
class RunResult:
    exc: BaseException | None
    frame_line: int | None  # innermost traceback line inside the fixture file
    stdout: str = ""

    def describe(self) -> str:
        if self.exc is None:
            return "ran clean"
        where = f"line {self.frame_line}" if self.frame_line is not None else "outside the fixture"
        return f"raised {type(self.exc).__name__} at {where}: {str(self.exc).splitlines()[0] if str(self.exc) else ''}"


def _require_torch():
    if torch is None:
        raise RuntimeError("the oracle needs torch installed to run fixtures")


@contextlib.contextmanager
def _torch_state_restored():
    """Put back every piece of global torch state a fixture could plausibly change."""
    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    anomaly = torch.is_anomaly_enabled()
    rng = torch.get_rng_state()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        torch.autograd.set_detect_anomaly(anomaly)
        torch.set_rng_state(rng)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
        if torch.is_inference_mode_enabled():  # left on by a fixture that entered it by hand
            raise OracleError("fixture left torch.inference_mode enabled")


def run_source(source: str, path: str | Path) -> RunResult:
    """Execute ``source`` in-process as ``__main__`` with ``path`` as its filename."""
    _require_torch()
    path = str(path)
    code = compile(source, path, "exec", dont_inherit=True)
    g = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    out = io.StringIO()
    exc: BaseException | None = None
    with _torch_state_restored(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(code, g)
        except SystemExit as e:
            if e.code not in (None, 0):
                exc = e
        except Exception as e:  # noqa: BLE001 - we want whatever torch raised
            exc = e
    frame_line = None
    if exc is not None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        if frames:
            frame_line = frames[-1].lineno
    return RunResult(exc, frame_line, out.getvalue())


# --------------------------------------------------------------------------- verdicts


@dataclass
class Verdict:
    path: str
    expectations: dict[int, set[str]]
    problems: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> str:
        return "\n".join([f"{self.path}:"] + [f"  PROBLEM: {p}" for p in self.problems] + [f"  {l}" for l in self.log])


def verify_source(source: str, path: str | Path) -> Verdict:
    """Check ``source``'s annotations against torch; the verdict lists every problem."""
    path = str(path)
    expectations = parse_expectations(source)
    v = Verdict(path, expectations)
    unknown = sorted({c for codes in expectations.values() for c in codes} - EXPECTATIONS.keys())
    if unknown:
        v.problems.append(f"unknown code(s) {unknown}; the oracle knows {sorted(EXPECTATIONS)}")
        return v
    src_lines = source.splitlines()

    if not expectations:
        r = run_source(source, path)
        v.log.append(f"near-miss: {r.describe()}")
        if r.exc is not None:
            v.problems.append(f"near-miss must run clean but {r.describe()}")
        return v

    annotated = set(expectations)
    for line in sorted(annotated):
        try:
            variant = neutralise(source, annotated - {line})
        except (OracleError, SyntaxError) as e:
            v.problems.append(f"cannot neutralise: {e}")
            return v
        r = run_source(variant, path)
        text = src_lines[line - 1].strip() if line - 1 < len(src_lines) else ""
        v.log.append(f"line {line} only ({text}): {r.describe()}")
        for code in sorted(expectations[line]):
            exp = EXPECTATIONS[code]
            if r.exc is None:
                v.problems.append(f"line {line} [{code}]: expected {exp.describe()}, but the program ran clean")
            elif not exp.matches(r.exc):
                v.problems.append(f"line {line} [{code}]: expected {exp.describe()}, but it {r.describe()}")
            elif exp.mode == "raises_here" and r.frame_line != line:
                v.problems.append(
                    f"line {line} [{code}]: the expected error was raised at line {r.frame_line}, not at line {line}"
                )

    try:
        clean = neutralise(source, annotated)
    except (OracleError, SyntaxError) as e:
        v.problems.append(f"cannot neutralise: {e}")
        return v
    r = run_source(clean, path)
    v.log.append(f"all annotated lines neutralised: {r.describe()}")
    if r.exc is not None:
        v.problems.append(f"with every annotated line neutralised the program must run clean, but it {r.describe()}")
    return v


def verify_file(path: str | Path) -> Verdict:
    path = Path(path)
    return verify_source(path.read_text(encoding="utf-8"), path)


def fixture_files() -> list[Path]:
    return sorted(FIXTURES_DIR.glob("*/*.py"))


def main(argv: list[str] | None = None) -> int:
    """``python tests/oracle.py [FILES...]``: verify fixtures, print each verdict."""
    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or fixture_files()
    bad = 0
    for p in paths:
        v = verify_file(p)
        print(("OK   " if v.ok else "FAIL ") + v.report())
        bad += not v.ok
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
