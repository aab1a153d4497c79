"""``%load_ext gradguard``: the runtime monitor in IPython and Jupyter.

From ``%load_ext gradguard`` on, the cells run under one ``Monitor``
(``gradguard.verify.monitor``), kept from cell to cell: a graph built in one cell and
written in place in the next is seen when a later cell's ``backward()`` reaches it. Each
hazard is printed on standard error the moment the monitor sees it, before the error it
explains, at the cell and line that caused it (the in-place write, not the
``backward()`` that fails), named as IPython's tracebacks name cells::

    gradguard: Cell In[3], line 2: GG201 an in-place write modifies a tensor that ...
        out += 1

A hazard in a module the notebook imports is placed at ``path:line:1``. A ``.data``
write that no backward showed to corrupt a saved tensor is reported (GG302) when its
cell ends. ``%unload_ext gradguard`` stops the monitor. ``%gradguard
--no-unused-parameters`` (``--unused-parameters`` turns it back on) leaves out GG311's
parameters that an optimizer steps though no forward used them; its cuts are still
reported.

Cells are known by IPython's compiler (``format_code_name``, IPython 8 and later). The
monitor's hooks are the thread's own: cells run on the kernel's main thread, as they do
in IPython and ipykernel.
"""

from __future__ import annotations

import linecache
import sys
from typing import Optional

from gradguard.configuration.files import display_path
from gradguard.verify.hosts import describe, torch_missing, user_files_outside

HOST_PACKAGES = ("IPython", "ipykernel", "jupyter_client", "traitlets", "tornado", "zmq",
                 "comm", "prompt_toolkit")

_running: dict[int, "CellMonitor"] = {}  # id(shell) -> its monitor


def load(shell) -> None:
    """Start monitoring the cells of ``shell`` (an ``InteractiveShell``)."""
    if id(shell) in _running:
        return
    missing = torch_missing()
    if missing:
        raise ImportError(f"gradguard's monitor {missing}")
    watcher = CellMonitor(shell)
    watcher.start()
    _running[id(shell)] = watcher
    shell.register_magic_function(_magic, magic_kind="line", magic_name="gradguard")


MAGIC_USAGE = "usage: %gradguard --no-unused-parameters | --unused-parameters"


def _magic(line: str) -> None:
    """``%gradguard --no-unused-parameters`` / ``--unused-parameters``: whether the running
    monitor reports GG311's unused parameters."""
    from IPython import get_ipython  # noqa: PLC0415 - the host's own

    watcher = _running.get(id(get_ipython()))
    choice = {"--no-unused-parameters": False, "--unused-parameters": True}.get(line.strip())
    if watcher is None or choice is None:
        print(MAGIC_USAGE if watcher is not None else "gradguard: the monitor is not loaded "
              "(%load_ext gradguard)", file=sys.stderr)
        return
    watcher.monitor.report_unused = choice


def unload(shell) -> None:
    """Stop monitoring the cells of ``shell``."""
    watcher = _running.pop(id(shell), None)
    if watcher is not None:
        watcher.stop()


class CellMonitor:
    """One monitor over a shell's cells, printing each hazard as it is seen."""

    def __init__(self, shell):
        from gradguard.verify.monitor import Monitor  # noqa: PLC0415 - imports torch

        self.shell = shell
        self.monitor = Monitor(user_files_outside(HOST_PACKAGES, also=self.is_cell),
                               on_event=self.show)

    def start(self) -> None:
        self.monitor.__enter__()
        self.shell.events.register("post_run_cell", self.cell_ended)

    def stop(self) -> None:
        self.shell.events.unregister("post_run_cell", self.cell_ended)
        self.monitor.__exit__(None, None, None)

    def cell_ended(self, result=None) -> None:
        self.monitor.settle()

    def cell_name(self, filename: str) -> Optional[str]:
        """``In[3]`` for the file IPython compiled cell 3 as; None for other files."""
        try:
            named = self.shell.compile.format_code_name(filename)
        except Exception:  # noqa: BLE001 - an IPython without it: no cell is known
            return None
        return named[1] if named else None

    def is_cell(self, filename: str) -> bool:
        return self.cell_name(filename) is not None

    def show(self, event) -> None:
        cell = self.cell_name(event.file)
        where = (f"Cell {cell}, line {event.line}" if cell
                 else f"{display_path(event.file)}:{event.line}:1")
        text = f"gradguard: {describe(event, where)}"
        source = linecache.getline(event.file, event.line).strip()
        if source:
            text += f"\n    {source}"
        print(text, file=sys.stderr, flush=True)
