"""The runtime verifier's containment and verdicts (needs torch; CI has the CPU build).

The user's code runs in a child process: whatever it does, gradguard answers with a
verdict, never a hang or a traceback, and never writes outside its temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from gradguard.frontends import cli
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
    path.parent.mkdir(parents=True, exist_ok=True)
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


# --- `gradguard verify`: the program's own run, its output and exit status -------------------

SILENT = """import torch
w = torch.ones(2, requires_grad=True)
y = w * 2
z = (y * y).sum()
y.data.mul_(0)
z.backward()
print("grad", w.grad)
"""  # GG301 at 5: a wrong gradient, and no error


def gradguard_verify(cwd, *command, timeout=120):
    """``gradguard verify COMMAND...`` in a process of its own, from ``cwd``: the program
    writes to the real standard streams, which the in-process CliRunner does not hold."""
    return subprocess.run([sys.executable, "-m", "gradguard", "verify", *command], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_verify_runs_pytest_as_ci_does_and_exits_with_its_status(tmp_path):
    script(tmp_path, "tests/test_passes.py", "def test_ok():\n    assert 1 + 1 == 2\n")
    script(tmp_path, "tests/test_fails.py", "def test_bad():\n    assert 1 + 1 == 3\n")
    pytest_ = ("--", "python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
    passed = gradguard_verify(tmp_path, *pytest_, "tests/test_passes.py")  # relative: here
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout and "No hazards seen" in passed.stderr
    failed = gradguard_verify(tmp_path, *pytest_, "tests/test_fails.py")
    assert failed.returncode == 1 and "1 failed" in failed.stdout
    assert "the program exited with status 1" in failed.stderr


def test_verify_shows_the_programs_output_and_its_traceback(tmp_path):
    script(tmp_path, "crash.py", "print('before the crash')\n1 / 0\n")
    result = gradguard_verify(tmp_path, "crash.py")
    assert result.returncode == 1  # a crash is never 0
    assert result.stdout == "before the crash\n"
    assert 'File "' + str(tmp_path / "crash.py") + '", line 2' in result.stderr
    assert "ZeroDivisionError: division by zero" in result.stderr
    assert "runpy" not in result.stderr and "monitor.py" not in result.stderr  # as python


def test_verify_exits_1_for_a_hazard_in_a_program_that_ends_well(tmp_path):
    script(tmp_path, "silent.py", SILENT)
    result = gradguard_verify(tmp_path, "silent.py")
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "grad tensor([0., 0.])", result.stdout.splitlines()[1]]  # the program's, then ours
    assert result.stdout.splitlines()[1].startswith("silent.py:5:1: GG301 ")


def test_verify_keeps_a_failing_status_of_the_program_over_its_hazards(tmp_path):
    script(tmp_path, "silent.py", SILENT + "raise SystemExit(3)\n")
    result = gradguard_verify(tmp_path, "silent.py")
    assert result.returncode == 3 and "silent.py:5:1: GG301" in result.stdout


@pytest.mark.parametrize("outcome, status", [
    (runner.Outcome("ok", exit_status=0), 0),
    (runner.Outcome("ok", events=[{}], exit_status=0), 1),
    (runner.Outcome("crashed", error="SystemExit: 4", exit_status=4), 4),
    (runner.Outcome("crashed", events=[{}], error="ValueError: x", exit_status=1), 1),
    (runner.Outcome("crashed", error="killed by SIGKILL", exit_status=137, lost=True), 137),
    (runner.Outcome("crashed", error="exit status 0", exit_status=0, lost=True), 2),
    (runner.Outcome("crashed", error="monitor failed: ..."), 2),
    (runner.Outcome("timeout", error="no result after 1 s"), 124),
])
def test_verify_status(outcome, status):
    assert cli.verify_status(outcome) == status


def test_os_exit_and_timeout_are_never_0(tmp_path):
    script(tmp_path, "quits.py", "import os\nos._exit(0)\n")
    script(tmp_path, "sleeps.py", "import time\ntime.sleep(60)\n")
    quits = gradguard_verify(tmp_path, "quits.py")
    assert quits.returncode == 2 and "ended without a result" in quits.stderr
    sleeps = gradguard_verify(tmp_path, "--timeout", "2", "sleeps.py")
    assert sleeps.returncode == 124 and "ran past --timeout (2 s)" in sleeps.stderr


UNUSED_LAYER = """import torch
net = torch.nn.ModuleDict({"used": torch.nn.Linear(2, 1), "spare": torch.nn.Linear(2, 1)})
opt = torch.optim.SGD(net.parameters(), lr=0.1)
net["used"](torch.ones(1, 2)).sum().backward()
opt.step()
"""


def test_verify_reports_unused_parameters_unless_told_not_to(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script(tmp_path, "unused.py", UNUSED_LAYER)
    result = CliRunner().invoke(cli.main, ["verify", "unused.py"])
    assert result.exit_code == 1
    assert "unused.py:5:1: GG311 this step updates a tensor of shape (1, 2), a tensor of shape (1,), " \
           "which no backward reached" in result.stdout
    result = CliRunner().invoke(cli.main, ["verify", "--no-unused-parameters", "unused.py"])
    assert result.exit_code == 0, result.stdout
