"""Write ``lint/knowledge/data/aliases.json``: the aliases torch's own test database declares.

Each ``OpInfo`` in ``torch.testing._internal.common_methods_invocations.op_db`` lists the
names that are the same operator (``arcsin`` is ``asin``, ``special.expit`` is ``sigmoid``,
``clip`` is ``clamp``, ``nn.functional.tanh`` is ``tanh``). The linter reads an alias's
knowledge (what it saves for backward) from the operator's entry. Aliases of an OpInfo
variant (``max.binary``, whose alias ``maximum`` is not the reduction ``max``) are left
out: the name alone does not say which overload is meant.

Needs what ``op_db`` imports (``numpy``, ``expecttest``): ``tools/regenerate.sh`` runs it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from probe_opinfo import op_db, table_name, torch  # noqa: E402 - tools/ is sys.path[0]

OUT = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data" / "aliases.json"


def main() -> None:
    aliases: dict[str, str] = {}
    for op in op_db:
        if op.variant_test_name:
            continue
        for alias in op.aliases:
            aliases.setdefault(table_name(alias.name), table_name(op.name))
    OUT.write_text(json.dumps({"torch_version": torch.__version__, "source": "op_db aliases",
                               "aliases": dict(sorted(aliases.items()))}, indent=1) + "\n")
    print(f"{len(aliases)} aliases -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
