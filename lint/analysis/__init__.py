"""One file analysed, and the project around it: ``checker`` (decode, parse, run the
engine under each assumption, place the findings; every failure a diagnostic), ``trace``
(what the engine knew at a line, for ``gradguard explain``), ``project`` (where the
project's imports resolve, each module analysed once), ``callers`` (the grad mode other
files call a function in) and ``memory`` (what a process keeps).

May import: ``engine``, ``gradguard.rules``, ``knowledge``, ``domain``, ``syntax``, and the
side rooms ``configuration``, ``editing``, ``reporting``; never ``runs`` or ``frontends``."""
