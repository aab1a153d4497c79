"""Edits to a file: the fixes rules attach to findings, applied atomically (``fixes``),
and ``# noqa`` comments read and added (``noqa``).

May import: ``configuration``, ``domain``, ``syntax``; never the engine's rooms or the
analysis."""
