"""gradguard: find the in-place operations and ``.data`` writes that break autograd."""

from gradguard.domain.findings import Finding

__all__ = ["Finding", "check_source"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``check_source`` is loaded when it is first used: the command line answers a
    cached run without loading libcst and the engine."""
    if name == "check_source":
        from gradguard.analysis.checker import check_source  # noqa: PLC0415

        return check_source
    raise AttributeError(f"module 'gradguard' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext gradguard``: the cells that follow run under the runtime monitor
    (``gradguard.frontends.ipython``; torch is imported now, not before)."""
    from gradguard.frontends.ipython import load  # noqa: PLC0415

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext gradguard``: the monitor stops."""
    from gradguard.frontends.ipython import unload  # noqa: PLC0415

    unload(ipython)
