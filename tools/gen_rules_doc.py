"""Write ``docs/rules.md`` from the rules' docstrings: an index, then every rule.

Usage: ``python tools/gen_rules_doc.py`` writes the file; ``--check`` writes nothing and
exits 1 when the file is missing or differs from what would be written (for CI and
tests/test_rule_docs.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gradguard.reporting import ruledoc

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the file is stale instead of writing it")
    args = parser.parse_args(argv)
    path = ROOT / ruledoc.DOC_PATH
    wanted = ruledoc.document()
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if args.check:
        if current != wanted:
            print(f"{ruledoc.DOC_PATH} is stale: run `python {ruledoc.GENERATOR}`",
                  file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        path.write_text(wanted, encoding="utf-8")
        print(f"wrote {ruledoc.DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
