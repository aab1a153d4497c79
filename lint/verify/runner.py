"""Run user code in a contained child process: wall-clock timeout, address-space limit,
a temporary working directory, its own environment, output captured.

Whatever the code does (hangs, allocates without bound, calls ``os._exit``, writes
files), the parent gets an ``Outcome``; it never hangs and never raises for it.
``gradguard verify`` runs the user's own command instead (``shown``): in the current
directory and environment, its output passed through as it comes, its exit status kept.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Optional

# Variables the child keeps from the parent's environment; everything else is dropped.
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "SYSTEMROOT", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
            "MKL_NUM_THREADS", "LD_LIBRARY_PATH", "VIRTUAL_ENV")


@dataclass
class Outcome:
    status: str  # "ok", "timeout", "crashed", "no verifier"
    events: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)  # file -> lines that ran
    error: Optional[str] = None  # how the user's code ended, or why it could not run
    output: str = ""  # the child's stdout and stderr, for --debug
    error_line: Optional[list] = None  # [file, line] where the user's code raised
    monitored: frozenset = frozenset()  # the codes the monitor can see at all
    # the program's exit status as a shell reports it (128 + N when killed by signal N);
    # None when it did not end by itself (timeout) or the monitor failed
    exit_status: Optional[int] = None
    lost: bool = False  # it ended without writing its result (killed, os._exit)

    @property
    def verdict_note(self) -> str:
        return {"timeout": "timeout", "crashed": f"crashed: {self.error}"}.get(self.status, "")


def run_contained(target: list[str], trace: list[str], timeout: float,
                  max_memory_mb: int, device: str = "cpu",
                  python: str = sys.executable, shown: bool = False,
                  report_unused: bool = True) -> Outcome:
    """Run ``target`` (``["--script", path, "--", *args]`` or ``["--module", name, "--",
    *args]``) under the monitor in a child process and return what happened. The
    address-space limit applies on the CPU only: CUDA's driver reserves far more address
    space than the process uses (under 8 GiB it does not start: torch then finds no GPU).
    ``shown``: the user's own run, in this directory and environment, with this
    process's standard streams (``Outcome.output`` stays empty). ``report_unused=False``:
    the monitor leaves GG311's unused parameters out."""
    with tempfile.TemporaryDirectory(prefix="gradguard-verify-") as workdir:
        result_path = os.path.join(workdir, "result.json")
        command = [python, "-m", "gradguard.verify.child", result_path, "--device", device]
        for path in trace:
            command += ["--trace", os.path.abspath(path)]
        if not report_unused:
            command.append("--no-unused-parameters")
        target = [os.path.abspath(t) if i == 1 and target[0] == "--script" else t
                  for i, t in enumerate(target)]
        command += target
        streams = {} if shown else dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        try:
            child = subprocess.Popen(
                command, cwd=None if shown else workdir, env=_environment(workdir, shown),
                start_new_session=True, **streams,
                preexec_fn=_limits(max_memory_mb if device == "cpu" else 0))
        except OSError as error:
            return Outcome("crashed", error=f"cannot start the child: {error}")
        try:
            output, _ = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            output, _ = child.communicate()
            return Outcome("timeout", error=f"no result after {timeout:g} s",
                           output=_text(output))
        except BaseException:  # Ctrl-C: the child is in a session of its own
            _kill_group(child)
            raise
        text = _text(output)
        if not os.path.exists(result_path):
            reason = _signal_name(child.returncode) or f"exit status {child.returncode}"
            if "MemoryError" in text:
                reason = "MemoryError (the address-space limit)"
            return Outcome("crashed", error=f"the process ended without a result ({reason})",
                           output=text, exit_status=_shell_status(child.returncode),
                           lost=True)
        with open(result_path, encoding="utf-8") as handle:
            data = json.load(handle)
        if child.returncode == 3:
            return Outcome("no verifier", error=data.get("error"), output=text)
        status = "crashed" if data.get("error") else "ok"
        return Outcome(status, data.get("events", []), data.get("lines", {}), data.get("error"),
                       text, data.get("error_line"), frozenset(data.get("monitored", ())),
                       data.get("exit_status"))


def _environment(workdir: str, shown: bool) -> dict[str, str]:
    """A replay's environment: a few variables kept, its home and temporary directory
    the scratch ``workdir``. The user's own run (``shown``): this one, gradguard and
    torch importable after the user's own ``PYTHONPATH``."""
    if shown:
        env = dict(os.environ)
        given = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
        env["PYTHONPATH"] = os.pathsep.join(given + _import_path())
        return env
    env = {key: os.environ[key] for key in KEPT_ENV if key in os.environ}
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(_import_path()))
    return env


def _text(output: Optional[bytes]) -> str:
    return output.decode(errors="replace") if output else ""


def _shell_status(returncode: int) -> int:
    """A status as a shell reports it: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _limits(max_memory_mb: int):
    def apply() -> None:  # in the child, before exec
        if max_memory_mb > 0:
            limit = max_memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()


def _signal_name(returncode: int) -> str:
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return ""


def _import_path() -> list[str]:
    """Where the child finds gradguard and torch: the parent's own import path."""
    return [path for path in sys.path if path and os.path.isdir(path)]
