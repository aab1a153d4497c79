"""Findings as people and programs read them: the output formats (``report``), colour
(``style``), where each rule's documentation lives (``doclinks``) and ``gradguard rule``'s
text (``ruledoc``).

May import: ``gradguard.rules`` (their names and docs), ``configuration``, ``domain``,
``syntax``; never the engine's rooms or the analysis."""
