"""The runtime verifier's containment and verdicts (needs torch; CI has the CPU build).

The user's code runs in a child process: whatever it does, gradguard answers with a
verdict, never a hang or a traceback, and never writes outside its temporary directory.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from gradguard import cli
from gradguard.verify import runner
from gradguard.verify.runner import run_contained

pytest.importorskip("torch")

SEED = """import torch
x = torch.FloatTensor([[1., 2.]])
w1 = torch.FloatTensor([[2.], [1.]])
w2 = torch.FloatTensor([3.])
w1.requires_grad = True
w2.requires_grad = True
d = torch.matmul(x, w1)
f = torch.matmul(d, w2)
d[:] = 1
f.backward()
"""


def script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(path, timeout=30.0, memory=8192):
    return run_contained(["--script", path, "--"], [path], timeout, memory)


def test_a_script_that_sleeps_forever_times_out(tmp_path):
    path = script(tmp_path, "sleeper.py", "import time\nwhile True:\n    time.sleep(1)\n")
    start = time.monotonic()
    outcome = run(path, timeout=5)
    assert outcome.status == "timeout"
    assert time.monotonic() - start < 30


def test_a_memory_bomb_is_stopped_by_the_address_space_limit(tmp_path):
    path = script(tmp_path, "bomb.py", "blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 26))\n")
    outcome = run(path, memory=3072)
    assert outcome.status == "crashed"
    assert "MemoryError" in (outcome.error or "")


def test_the_address_space_limit_is_for_the_cpu_only(tmp_path, monkeypatch):
    """CUDA's driver reserves more address space than 8 GiB: under the limit, torch in the
    replay found no GPU on an H200 (2026-11-26). So a cuda replay runs without it."""
    path = script(tmp_path, "limit.py", "import resource\n"
                  "print('AS', resource.getrlimit(resource.RLIMIT_AS)[0])\n")
    cpu = run_contained(["--script", path, "--"], [path], 30.0, 3072, "cpu")
    assert f"AS {3072 * 1024 * 1024}" in cpu.output  # the limit the child runs under
    limits = []
    monkeypatch.setattr(runner, "_limits", lambda mb: limits.append(mb) or (lambda: None))
    run_contained(["--script", path, "--"], [path], 30.0, 3072, "cuda")
    run_contained(["--script", path, "--"], [path], 30.0, 3072, "cpu")
    assert limits == [0, 3072]


def test_os_exit_is_a_crash_not_a_hang(tmp_path):
    path = script(tmp_path, "quitter.py", "import os\nos._exit(3)\n")
    outcome = run(path)
    assert outcome.status == "crashed"
    assert "exit status 3" in outcome.error


def test_written_files_stay_in_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = script(tmp_path, "writer.py", "open('out.txt', 'w').write('x')\n"
                  "import os\nopen(os.path.expanduser('~/home.txt'), 'w').write('x')\n")
    outcome = run(path)
    assert outcome.status == "ok", outcome.error
    assert sorted(os.listdir(tmp_path)) == ["writer.py"]


def test_sys_exit_zero_is_a_clean_run(tmp_path):
    outcome = run(script(tmp_path, "done.py", "import sys\nsys.exit(0)\n"))
    assert outcome.status == "ok"


def test_lines_that_ran_are_reported(tmp_path):
    path = script(tmp_path, "branch.py", "x = 1\nif x == 2:\n    y = 3\nz = 4\n")
    outcome = run(path)
    lines = outcome.lines[os.path.realpath(path)]
    assert 1 in lines and 4 in lines and 3 not in lines


def test_check_verify_confirms_the_seed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script(tmp_path, "seed.py", SEED)
    result = CliRunner().invoke(cli.main, ["check", "--verify", "--format", "json", "seed.py"])
    assert result.exit_code == 1, result.output
    (finding,) = json.loads(result.stdout)
    assert (finding["line"], finding["code"], finding["verdict"]) == (9, "GG201", "confirmed")


def test_check_verify_says_not_reached_for_code_that_never_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = "\n".join("    " + line for line in SEED.splitlines())
    script(tmp_path, "unused.py", "def never_called():\n" + body + "\n")
    result = CliRunner().invoke(cli.main, ["check", "--verify", "unused.py"])
    assert result.exit_code == 1
    assert result.stdout.strip().endswith("[not reached]")


def test_verify_command_reports_hazards_and_exit_status(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script(tmp_path, "seed.py", SEED)
    result = CliRunner().invoke(cli.main, ["verify", "seed.py"])
    assert result.exit_code == 1
    assert "seed.py:9:1: GG201" in result.stdout
    script(tmp_path, "clean.py", "import torch\nprint(torch.ones(2).sum())\n")
    assert CliRunner().invoke(cli.main, ["verify", "clean.py"]).exit_code == 0


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    monkeypatch.chdir(tmp_path)
    script(tmp_path, "seed.py", SEED)
    result = CliRunner().invoke(cli.main, ["verify", "--device", "cuda", "seed.py"])
    assert result.exit_code == 2
    assert "CUDA is not available" in result.stderr


def test_check_verify_replays_past_raising_lines(monkeypatch):
    """The bundled sample stops at its first GG101; the replay neutralises each raising
    line and goes on, so every finding gets confirmed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.chdir(root)
    result = CliRunner().invoke(cli.main, ["check", "--verify", "--format", "json",
                                           "examples/sample.py"])
    verdicts = {(f["line"], f["code"]): f["verdict"] for f in json.loads(result.stdout)}
    assert len(verdicts) >= 6
    assert set(verdicts.values()) == {"confirmed"}


OTHER_FILE = "fixtures/GG201/bug_forward_writes_argument_other_file"


@pytest.mark.parametrize("target, places", [
    ("main.py", {("main.py", 16), ("models.py", 12)}),  # the caller alone: write and mirror
    ("", {("models.py", 12)}),  # the folder: the write, once
])
def test_a_write_in_an_imported_file_is_confirmed_by_replaying_its_caller(target, places):
    """models.py run on its own reaches nothing: the write runs when main.py calls it, so
    the mirror at the call and the finding at the write both take that replay's verdict."""
    folder = os.path.join(os.path.dirname(__file__), "..", OTHER_FILE)
    result = CliRunner().invoke(cli.main, ["check", "--no-cache", "--verify", "--format",
                                           "json", os.path.join(folder, target)])
    findings = json.loads(result.stdout)
    assert {(os.path.basename(f["path"]), f["line"]) for f in findings} == places
    assert {f["verdict"] for f in findings} == {"confirmed"}
