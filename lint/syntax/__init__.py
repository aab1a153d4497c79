"""What a file's text says before any analysis: libcst's parse, a walk of a tree's
children, positions, names read, Python's scopes decided from the syntax, and which
statements may matter to a rule.

May import: nothing else of gradguard (the bottom layer, beside ``knowledge`` and
``domain``)."""
