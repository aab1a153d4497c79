#!/usr/bin/env bash
# Regenerate every data file the linter ships (lint/knowledge/data/*.json) from the installed torch,
# and the generated tables of the library models from the installed libraries.
# Usage (repo root or anywhere): tools/regenerate.sh   [uses $PYTHON, default: python]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
"$PYTHON" tools/gen_torch_api.py
"$PYTHON" tools/gen_saved_tensors.py
# torch's own test databases (op_db, module_db) need numpy and expecttest besides torch
"$PYTHON" tools/gen_aliases.py
"$PYTHON" tools/probe_opinfo.py --write
"$PYTHON" tools/probe_moduleinfo.py --write
"$PYTHON" tools/probe_rsample.py --write
"$PYTHON" tools/probe_layouts.py --write
"$PYTHON" tools/gen_signatures.py --write  # reads the tables above
"$PYTHON" tools/gen_nondifferentiable.py --write
"$PYTHON" tools/probe_lightning_modes.py --write  # the model of Lightning: needs lightning (test extra)
