"""The child process of the verifier: run the user's code under the monitor.

    python -m gradguard.verify.child RESULT.json [--device cpu|cuda] [--trace FILE]...
        [--no-unused-parameters] (--script PATH | --module NAME) -- ARGS...

Writes RESULT.json: ``{"events": [...], "lines": {file: [line, ...]}, "error": str|null,
"exit_status": int|null}`` where ``lines`` are the lines that ran in the ``--trace``
files and ``exit_status`` is the status ``python`` would have exited the program with
(null when the monitor failed). As ``python`` does, an uncaught exception's traceback, or
``sys.exit``'s message, goes to standard error. The parent reads the result whatever
happens to the user's code; a crash of this process is the parent's to report.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import traceback


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gradguard.verify.child")
    parser.add_argument("result")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--trace", action="append", default=[])
    parser.add_argument("--no-unused-parameters", dest="unused", action="store_false")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--script")
    target.add_argument("--module")
    split = argv.index("--") if "--" in argv else len(argv)
    options, args = parser.parse_args(argv[:split]), argv[split + 1:]

    result = {"events": [], "lines": {}, "error": None}
    traced = {os.path.realpath(path) for path in options.trace}
    ran: dict[str, set] = {path: set() for path in traced}

    def tracer(frame, event, arg):
        path = frame.f_code.co_filename
        if path in ran:
            ran[path].add(frame.f_lineno)
            return local
        return None

    def local(frame, event, arg):
        if event == "line":
            ran[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    try:
        import torch
    except ImportError as error:
        result["error"] = f"the verifier needs torch (pip install 'gradguard[verify]'): {error}"
        _write(options.result, result)
        return 3
    from gradguard.verify import monitor
    if options.device == "cuda":
        if not torch.cuda.is_available():
            result["error"] = "--device cuda: CUDA is not available on this machine"
            _write(options.result, result)
            return 3
        torch.set_default_device("cuda")

    def run():
        if options.script:
            sys.path.insert(0, os.path.dirname(os.path.abspath(options.script)))
            return monitor.run_path(options.script, [options.script, *args], options.unused)
        return _run_module(monitor, options.module, [options.module, *args], options.unused)

    if traced:
        sys.settrace(tracer)
    try:
        events, error = run()
    except BaseException:  # the monitor itself failed: say so, do not hide it
        events, error = [], None
        result["error"] = "monitor failed: " + traceback.format_exc(limit=3)
    finally:
        sys.settrace(None)
    result["events"] = [event._asdict() for event in events]
    result["monitored"] = sorted(monitor.MONITORED_CODES)
    result["lines"] = {path: sorted(lines) for path, lines in ran.items()}
    if error is not None and result["error"] is None:
        result["error"] = f"{type(error).__name__}: {error}".splitlines()[0][:500]
        result["error_line"] = _user_line(error, traced)
    if error is not None or result["error"] is None:  # the program ended: not the monitor
        result["exit_status"] = _exit_status(error, monitor)
    _write(options.result, result)
    return 0


def _exit_status(error, monitor) -> int:
    """The status ``python`` would exit with when ``error`` ended the program (None: it
    ran to its end), after printing what it would print."""
    if error is None:
        return 0
    if isinstance(error, SystemExit):
        if error.code is None or isinstance(error.code, int):
            return error.code or 0
        print(error.code, file=sys.stderr)
        return 1
    runners = {os.path.realpath(path) for path in (__file__, monitor.__file__, runpy.__file__)}
    frames = error.__traceback__  # without the frames that ran the program, as python
    while frames is not None and _runs_the_program(frames.tb_frame.f_code.co_filename,
                                                   runners):
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)
    return 1


def _runs_the_program(filename: str, runners: set) -> bool:
    """Whether code from ``filename`` is the verifier's or ``runpy``'s (which Python
    3.11 names ``<frozen runpy>``)."""
    return filename == "<frozen runpy>" or os.path.realpath(filename) in runners


def _run_module(monitor, name: str, argv: list[str], report_unused: bool = True):
    """``python -m NAME ARGS`` under the monitor (``gradguard verify -- pytest tests/``)."""
    sys.argv = argv
    watch = monitor.Monitor(report_unused=report_unused)
    error = None
    with watch:
        try:
            runpy.run_module(name, run_name="__main__", alter_sys=True)
        except SystemExit as exit_:
            error = None if exit_.code in (0, None) else exit_
        except BaseException as raised:  # the user's code failed: that is a result
            error = raised
    return watch.events, error


def _user_line(error: BaseException, traced: set):
    """[file, line] of the innermost traceback frame in a traced file."""
    found = None
    for frame, line in traceback.walk_tb(error.__traceback__):
        path = os.path.realpath(frame.f_code.co_filename)
        if path in traced:
            found = [path, line]
    return found


def _write(path: str, result: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
