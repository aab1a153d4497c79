"""Run Python scripts as ``python script.py`` would, without paying torch's import each time.

Importing torch costs a second or two of CPU; tests that run many small torch programs in
their own process (tests/test_rule_docs.py runs every rule's examples) would spend most of
their time importing it.  ``TorchRunner`` starts one *server* process that imports torch
once (started with the same ``-W`` options a plain run would get) and then, per script,
forks a child: a fresh process image that already holds torch, so every script still runs
isolated from every other one (its own globals, its own autograd state, its own ``sys``).

The child behaves as ``python script.py`` does where the tests look: the script runs as
``__main__`` with ``__file__`` set, its folder first on ``sys.path`` and as the current
directory; stdout and stderr are files; an uncaught exception prints Python's traceback
(the script's frames only) and exits 1; ``SystemExit`` exits with its code; warnings are
shown as Python shows them.  A script still running after ``timeout`` seconds is killed
by ``SIGALRM`` (exit status ``-SIGALRM``).  The warning filters torch's import adds are in
place before the script runs, as they would be once the script imported torch.

torch is only imported, never used, in the server, so its thread pools are not started
before a fork.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import types
from pathlib import Path


class TorchRunner:
    """The test side: a server started on first use; ``run`` is ``subprocess.run``'s
    ``capture_output=True, text=True`` for ``python <options> script``."""

    def __init__(self, python_options: tuple[str, ...] = ()):
        self.server = subprocess.Popen([sys.executable, *python_options, __file__],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, script: Path, timeout: int) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as captured:
            out, err = Path(captured, "stdout"), Path(captured, "stderr")
            request = {"script": str(script), "stdout": str(out), "stderr": str(err),
                       "timeout": timeout}
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            reply = self.server.stdout.readline()
            if not reply:
                raise RuntimeError(f"the torch runner died (status {self.server.wait()})")
            return subprocess.CompletedProcess([sys.executable, str(script)],
                                               json.loads(reply)["returncode"],
                                               out.read_text(encoding="utf-8"),
                                               err.read_text(encoding="utf-8"))

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=30)


# ------------------------------------------------------------------------ the server side


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _exit_status(exc: SystemExit) -> int:
    """What Python's own exit makes of ``SystemExit(code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _run_as_main(script: Path) -> int:
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    sys.modules["__main__"] = main
    sys.argv = [str(script)]
    sys.path[0] = str(script.parent)
    os.chdir(script.parent)
    code = compile(script.read_bytes(), str(script), "exec")
    try:
        exec(code, main.__dict__)
    except SystemExit as exc:
        return _exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - what the interpreter does with it
        # Python's traceback for a script starts at the script: drop this frame.
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
        return 1
    return 0


def _child(request: dict) -> None:
    """Runs in the forked child; never returns."""
    status = 1
    try:
        _redirect(0, os.devnull, os.O_RDONLY)
        _redirect(1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _redirect(2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(request["timeout"])
        status = _run_as_main(Path(request["script"]))
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed stream: nothing left to lose
                pass
        os._exit(status)


def serve() -> None:
    import torch  # noqa: F401 - imported once here, inherited by every child

    requests, replies = sys.stdin.buffer, os.fdopen(os.dup(1), "w")
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, wait_status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
