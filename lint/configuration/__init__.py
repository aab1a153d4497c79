"""What to lint and how: finding files (``files``, and ``ignorefiles`` for what
``.gitignore`` leaves out), configuration files (``config``), the frozen options of a run
(``options``) and rule codes (``selection``).

May import: ``gradguard.rules`` (the codes), ``domain``, ``syntax``; never the engine's
rooms or the analysis."""
