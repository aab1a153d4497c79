"""A run over files: ``run`` (``gradguard check``: files found and linted, fixes,
``--add-noqa``, ``--verify``, the report, the exit status), ``linting`` (one file or many,
in processes, the cache's results first), ``settings`` (each file's settings from the
command line and the nearest configuration), ``cache``, ``notebooks`` (a notebook as
Python text and its findings back at their cells) and ``progress``.

May import: ``analysis`` and everything below it, ``verify``; never ``frontends``."""
