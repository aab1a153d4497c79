"""The monitor inside a host process: the pytest plugin and the IPython extension.

A host keeps running its own code around the user's (pytest's runner, IPython's kernel),
and both live in ``site-packages``, which the monitor counts as the user's (third-party
code may be where a hazard is). ``user_files_outside`` leaves the host's own packages
out, so an event is never placed in the host's frames. Imports torch (through the
monitor) only when a predicate is made, that is once the host turns the monitor on.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, Optional


def torch_missing() -> Optional[str]:
    """Why the monitor cannot run here (torch does not import), or None."""
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError as error:
        return f"needs torch (pip install 'gradguard[verify]'): {error}"
    return None


def package_roots(names: Iterable[str]) -> list[str]:
    """The folders of the named packages that are imported (a host's own: they are, as
    it runs), each ending with a separator. A plain module is no folder of its own (its
    folder is ``site-packages``): it is left out."""
    roots = []
    for name in names:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path and os.path.basename(path).startswith("__init__."):
            roots.append(os.path.join(os.path.dirname(os.path.abspath(path)), ""))
    return roots


def user_files_outside(packages: Iterable[str],
                       also: Optional[Callable[[str], bool]] = None) -> Callable[[str], bool]:
    """The monitor's ``user_files``: the default files of the user's, less those of
    ``packages`` (the host's), plus the files ``also`` accepts (IPython's cells)."""
    from gradguard.verify.monitor import default_user_files  # noqa: PLC0415 - imports torch

    excluded = tuple(package_roots(packages))

    def user_files(filename: str) -> bool:
        if also is not None and also(filename):
            return True
        if excluded and os.path.abspath(filename).startswith(excluded):
            return False
        return default_user_files(filename)
    return user_files


def describe(event, where: str) -> str:
    """One hazard as gradguard reports it: ``where`` (``path:line:1``, or a cell), then
    the code and the message."""
    return f"{where}: {event.code} {event.message}"
