"""GG900: a ``# noqa`` code that suppresses nothing (as ruff's RUF100)."""

from __future__ import annotations

from gradguard.rules.base import Rule


class UnusedNoqa(Rule):
    """## What it does
    Finds gradguard codes in ``# noqa`` comments that suppress no finding: ``# noqa:
    GG302`` on a line where gradguard finds nothing (the write was fixed, or moved), or a
    code that names no rule (``GG999``). In ``# noqa: GG101, GG302`` where only GG101 is
    found, it reports GG302.

    It is off by default: select it (``extend-select = ["GG900"]``) to keep the
    suppressions of a code base honest. It is not an analysis of the code, but of what
    the other rules found: a code counts as unused only when its rule is enabled for the
    file (a rule that is off, or in ``per-file-ignores``, may be on in another run), and a
    ``noqa`` in a module counts as used when a file that imports it finds what it
    suppresses there, if that file is linted in the same run. It never reports a bare
    ``# noqa`` or another linter's codes (``E501``): the comment is shared with flake8
    and ruff, which read those. A ``noqa`` that names GG900 itself is never reported.
    Under flake8 (``--extend-select GG900``) every rule runs, so every code counts as
    enabled; flake8 lints one file at a time, so a ``noqa`` that only an importer's
    findings use counts as unused there, as with ``gradguard check`` on that file alone.

    ## Why is this bad?
    A stale suppression hides the next real finding on its line: the write that comes
    back after a refactoring is not reported. And a reader takes the comment for a
    statement that the line is deliberate.

    ## Example
    ```python
    import torch

    w = torch.ones(3)
    w.mul_(2)  # noqa: GG101
    ```

    ## Use instead
    ```python
    import torch

    w = torch.ones(3)
    w.mul_(2)
    ```

    ## Fix safety
    ``--fix`` removes the unused codes, or the whole directive when none is left (with
    its line, when the comment is alone on it; a comment after it stays): safe, a
    comment changes nothing the program computes. Lint the whole project in one run
    before fixing: a ``noqa`` in a module may only be used by the findings that the files
    importing it give.
    """

    code = "GG900"
    name = "unused-noqa"
    summary = "`# noqa` code that suppresses no finding"
    advisory = True
    default_enabled = False
    fixable = "always"
