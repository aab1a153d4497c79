"""Time the language server as an editor sees it: didChange to publishDiagnostics.

    python bench/bench_server.py                    # generated 1,000-line programs
    python bench/bench_server.py --file path/to/model.py --edits 30 --debounce 0.15

Starts ``python -m gradguard server`` (over pipes, as an editor does), opens each file
(from a temporary copy on disk, so configuration and imports resolve as they would),
then changes it ``--edits`` times: each change edits one number on a line that holds one
and waits for the diagnostics of that version. Prints the latency of the changes (median,
90th percentile, best, worst; the debounce included), of a save, and the server's memory.
Then, in this process, where a lint of the same text spends its time: libcst's parse,
its positions pass, the analysis, the garbage collection that ends a check (the server
does it after publishing).
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from bench_generated import ProgramGenerator  # noqa: E402
from lsp_client import SERVER, Client  # noqa: E402

_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


def edited(text: str, serial: int) -> str:
    """``text`` with one integer literal changed (a different one each time)."""
    lines = text.split("\n")
    numbered = [i for i, line in enumerate(lines)
                if _NUMBER.search(line) and not line.lstrip().startswith("#")]
    index = numbered[(serial * 7919) % len(numbered)]
    lines[index] = _NUMBER.sub(lambda m: str(int(m.group(1)) + 1), lines[index], count=1)
    return "\n".join(lines)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def serve_and_time(name: str, text: str, edits: int, debounce: float, root: Path) -> list[float]:
    path = root / name
    path.write_text(text)
    uri = path.as_uri()
    client = Client((*SERVER, "--debounce", str(debounce)), cwd=root, timeout=120)
    try:
        client.initialize(root)
        started = time.perf_counter()
        client.open(uri, text)
        found = client.diagnostics(uri, version=1)
        first = time.perf_counter() - started
        times = []
        for version in range(2, edits + 2):
            text = edited(text, version)
            started = time.perf_counter()
            client.change(uri, text, version)
            client.diagnostics(uri, version=version)
            times.append(time.perf_counter() - started)
        saves = []
        for _ in range(3):  # a save lints the same text again: no parse, no positions pass
            started = time.perf_counter()
            client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            client.diagnostics(uri)
            saves.append(time.perf_counter() - started)
        memory = rss_mib(client.process.pid) if Path("/proc").is_dir() else float("nan")
        client.close()
    finally:
        client.kill()
    ms = sorted(1000 * t for t in times)
    print(f"{name}: {text.count(chr(10))} lines, {len(found)} diagnostics; debounce "
          f"{1000 * debounce:.0f} ms; didOpen {1000 * first:.0f} ms; didChange -> "
          f"publishDiagnostics over {len(ms)} edits: median {statistics.median(ms):.0f} ms, "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, min {ms[0]:.0f}, max {ms[-1]:.0f}; "
          f"didSave -> publishDiagnostics median {1000 * statistics.median(saves):.0f} ms; "
          f"server RSS {memory:.0f} MiB", flush=True)
    return times


def breakdown(name: str, text: str, path: Path, repeat: int = 3) -> None:
    """Where one lint spends its time, best of ``repeat``, in this process."""
    import libcst as cst

    from gradguard.analysis.checker import check_source
    from gradguard.engine import analyze
    from gradguard.rules import ALL_RULES
    from gradguard.syntax.positions import Positions

    rules = [rule for rule in ALL_RULES if rule.default_enabled]
    check_source(text, str(path), rules)
    text = edited(text, 1)  # as after a change: neither the project nor the checker has it
    best: dict[str, float] = {}
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        timings = {}
        started = time.perf_counter()
        module = cst.parse_module(text)
        timings["parse"] = time.perf_counter() - started
        positions = Positions(module)
        started = time.perf_counter()
        positions.range(module)  # libcst's positions, for every node
        timings["positions"] = time.perf_counter() - started
        started = time.perf_counter()
        analyze(module, rules, lambda *report: None, [], positions, path=str(path),
                project=None, text=text)
        timings["analysis"] = time.perf_counter() - started
        del module, positions
        started = time.perf_counter()
        gc.collect(0)
        timings["collection"] = time.perf_counter() - started
        gc.enable()
        text = edited(text, len(best) + 2)
        started = time.perf_counter()
        check_source(text, str(path), rules)  # all of it, its collection included
        timings["check_source"] = time.perf_counter() - started
        for key, value in timings.items():
            best[key] = min(best.get(key, value), value)
    print(f"{name}: in-process, best of {repeat}: " + ", ".join(
        f"{key} {1000 * value:.0f} ms" for key, value in best.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="A file to time (repeatable); default: generated programs.")
    parser.add_argument("--size", type=int, default=1000, help="Lines of a generated program.")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--debounce", type=float, nargs="+", default=[0.0, 0.15])
    parser.add_argument("--no-breakdown", action="store_true")
    args = parser.parse_args()
    sources = [(path.name, path.read_text(encoding="utf-8")) for path in args.file] or [
        (f"generated_{args.size}_d{args.depth}_s{seed}.py",
         ProgramGenerator(args.size, args.depth, seed).program()) for seed in args.seeds]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for name, text in sources:
            for debounce in args.debounce:
                serve_and_time(name, text, args.edits, debounce, root)
            if not args.no_breakdown:
                breakdown(name, text, root / name)


if __name__ == "__main__":
    main()
