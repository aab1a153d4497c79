"""The README's promises: its sample output is what gradguard prints, and its first
command's sample exits 1 with findings."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands():
    commands = re.search(r"```bash\n(.*?)```", README, re.S).group(1).splitlines()
    assert "gradguard check examples/sample.py" in commands[0]
    assert "torch==2.13.0" in commands[1] and "pytest" in commands[1]


def test_readme_console_block_is_real_output():
    block = re.search(r"```console\n\$ (gradguard check [^\n]+)\n(.*?)```", README, re.S)
    command, expected = block.group(1), block.group(2)
    result = subprocess.run(
        [sys.executable, "-m", "gradguard", *command.split()[1:]],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 1
    assert result.stdout + result.stderr == expected


def test_readme_documents_every_format_in_one_table():
    from gradguard.reporting.report import FORMATS

    tables = re.findall(r"^\| Format \| What reads it \| Example \|\n\|[-|]+\|\n((?:\|.*\n)+)",
                        README, re.M)
    assert len(tables) == 1
    listed = [re.match(r"\| `([a-z]+)`", row).group(1) for row in tables[0].splitlines()]
    assert listed == list(FORMATS)
