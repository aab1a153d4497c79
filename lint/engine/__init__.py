"""The abstract interpreter, in rooms: see ``interpreter.py`` and ``docs/design.md``."""

from gradguard.engine.interpreter import Interpreter, Report, analyze

__all__ = ["Interpreter", "Report", "analyze"]
