"""The speed benchmark (``bench/bench_speed.py``): its options, what it reads from
gradguard's ``--help``, its table on made-up runs. Nothing here is timed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_speed", ROOT / "bench" / "bench_speed.py")
speed = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = speed  # dataclasses look their module up by name
_spec.loader.exec_module(speed)

CHECK_HELP = """\
Usage: gradguard check [OPTIONS] [PATHS]...

Options:
  --select CODES                  Codes or prefixes to report.
  -q, --quiet                     Do not print the summary or a progress bar.
  --isolated                      Ignore all configuration files.
  --cache-dir DIR                 Where the cache lives (see also
                                  --no-cache).
  -j, --jobs INTEGER RANGE        Processes to lint with (0: one per CPU).
                                  [default: 0; x>=0]
  --cache / --no-cache            Read and write the cache.  [default: cache]
  -h, --help                      Show this message and exit.
"""


def test_help_runs():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_speed.py"), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for option in ("--transformers", "--torchfix", "--torchfix-files", "--quick", "--json"):
        assert option in result.stdout
    assert "pip download --no-deps --no-binary :all: transformers" in result.stdout


def test_quick_defaults_and_explicit_options():
    quick = speed.parse_args(["--quick"])
    assert (quick.repeat, quick.corpora) == (1, ["torch", "generated"])
    full = speed.parse_args(["--quick", "--repeat", "2", "--corpora", "generated"])
    assert (full.repeat, full.corpora) == (2, ["generated"])
    assert speed.parse_args([]).corpora == ["torch", "transformers", "generated"]


def test_options_of_a_click_help():
    blocks = speed.option_blocks(CHECK_HELP)
    assert {"--select", "--quiet", "--isolated", "--cache-dir", "--jobs", "--cache",
            "--no-cache", "--help"} == set(blocks)
    assert "[default: 0; x>=0]" in blocks["--jobs"]
    gradguard = speed.Gradguard("gg", frozenset(blocks), "0")
    tree, cache = Path("tree"), Path("cache")
    assert gradguard.check(tree) == ["gg", "check", "-q", "--exit-zero", "--isolated",
                                     "--no-cache", "tree"]
    assert gradguard.check(tree, cache=cache)[-3:] == ["--cache-dir", "cache", "tree"]
    assert gradguard.check(tree, jobs=1)[-3:] == ["--jobs", "1", "tree"]
    mentioned = speed.option_blocks(CHECK_HELP.replace("--cache / --no-cache", "--cache"))
    assert "--no-cache" not in mentioned  # only named in --cache-dir's help
    older = speed.Gradguard("gg", frozenset({"--quiet", "--jobs"}), "1")
    assert older.check(tree) == ["gg", "check", "-q", "--exit-zero", "tree"]


def test_touch_appends_a_line_of_its_own(tmp_path):
    ended, unended = tmp_path / "a.py", tmp_path / "b.py"
    ended.write_bytes(b"x = 1\n")
    unended.write_bytes(b"x = 1")
    speed.touch(ended)
    speed.touch(unended)
    assert ended.read_bytes() == unended.read_bytes() == b"x = 1\n" + speed.TOUCH_LINE


def test_prefix_within():
    assert speed.prefix_within([10, 20, 30], 5) == 0
    assert speed.prefix_within([10, 20, 30], 30) == 2
    assert speed.prefix_within([10, 20, 30], 100) == 3


def row(label: str, tool: str, seconds: list, files: int = 100, lines: int = 50_000,
        failure: str = "") -> "speed.Row":
    made = speed.Row("torch", label, tool, [tool], files, lines)
    made.runs = [speed.Run(s, 102_400, 0, failure) for s in seconds]
    return made


def test_markdown_table_of_made_up_runs():
    rows = [row("gradguard cold", "gradguard", [4.0, 5.0, 6.0]),
            row("gradguard --jobs 1", "gradguard", [9.0], failure="exit status 2: boom"),
            row("ruff --select ALL", "ruff", [0.5, 0.4, 0.6]),
            row("TorchFix, a subset", "torchfix", [10.0], files=10, lines=5_000)]
    table = speed.markdown_table(rows).splitlines()
    assert len({len(line) for line in table}) == 1  # the columns line up
    cells = [[cell.strip() for cell in line.split("|")[1:-1]] for line in table]
    assert cells[0] == [title for title, _ in speed.COLUMNS]
    assert set(table[1]) == {"|", "-", ":"}
    assert cells[2] == ["torch", "gradguard cold", "100", "50,000", "5.00", "20", "10,000",
                        "100", "10.0x"]
    assert cells[3][4:] == ["failed", "-", "-", "-", "-"]
    assert cells[4][4:] == ["0.500", "200", "100,000", "100", "1.0x"]
    # 5,000 lines in 10 s against 50,000 in 0.5 s: 200 times slower per line
    assert cells[5][2:] == ["10", "5,000", "10.00", "1.00", "500", "100", "200.0x*"]


def test_report_explains_the_star_and_lists_notes():
    info = {"date": "2026-01-01 00:00", "cpu": "CPU", "usable_cpus": 2, "cpus": 4,
            "system": "Linux", "python": "3.11.7", "gradguard": "0.1.0", "ruff": "0.17.6",
            "libcst": "1.9.0", "torch": "2.13.0", "torchfix": "0.7.0", "repeat": 3,
            "gradguard_default_jobs": "0"}
    rows = [row("ruff --select ALL", "ruff", [0.5]),
            row("TorchFix, a subset", "torchfix", [10.0], files=10, lines=5_000)]
    text = speed.report(info, rows, ["a note"])
    assert "2 usable CPUs (of 4)" in text and "median of 3 runs" in text
    assert "- \\* by lines per second" in text and "- a note" in text
    assert "\\*" not in speed.report(info, rows[:1], [])
