#!/bin/bash
# The GPU check: the verifier replays fixtures with tensors on the GPU and on the CPU, and
# every finding must get the same verdict on both. For a machine with a GPU and torch but
# no network: libcst travels as a wheel in .whl/ (see the README's "Development"), and
# gradguard runs from a copy of its sources (lint/ as gradguard, rules/ as gradguard.rules).
#     OUT=/tmp/gpu tools/gpu_check.sh [FIXTURES_PER_RULE]
#     DEVICES=cuda CPU_JSON=cpu.json tools/gpu_check.sh 1   # against a CPU run made elsewhere
# Exit status 0 when the verdicts agree and the GPU replays ran, else 1.
set -u
per_rule=${1:-2}
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
site=$(mktemp -d)
python3 -c "import libcst" 2>/dev/null \
    || python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl || exit 1
cp -r lint "$site/gradguard" && cp -r rules "$site/gradguard/rules"
export PYTHONPATH="$site" PYTHONUNBUFFERED=1 GRADGUARD_NO_CACHE=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
            torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
python3 - <<'PY'  # why the replay runs without an address-space limit on the GPU
import resource
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
import torch
print("under an 8 GiB address-space limit, torch.cuda.is_available():", torch.cuda.is_available())
PY
files=$(for rule in fixtures/GG*/; do ls "$rule" | grep '^bug_.*\.py$' | head -"$per_rule" \
        | sed "s#^#$rule#"; done)
cpu_json=${CPU_JSON:-$out/cpu.json}
for device in ${DEVICES:-cuda cpu}; do
    SECONDS=0
    python3 -m gradguard check --isolated --verify --device "$device" --format json $files \
        > "$out/$device.json" 2> "$out/$device.err"
    echo "$device: exit $?, ${SECONDS} s; $(grep -m1 'finding' "$out/$device.err")"
done
python3 - "$cpu_json" "$out/cuda.json" <<'PY'
import collections, json, sys

def verdicts(path):
    return {(f["path"], f["line"], f["code"]): f.get("verdict")
            for f in json.load(open(path))}

cpu, cuda = map(verdicts, sys.argv[1:])
ran = {path for path, _, _ in cuda}
cpu = {key: verdict for key, verdict in cpu.items() if key[0] in ran}  # the same files
print("cpu", dict(collections.Counter(cpu.values())))
print("cuda", dict(collections.Counter(cuda.values())))
differ = sorted(key for key in cpu.keys() | cuda.keys() if cpu.get(key) != cuda.get(key))
for key in differ:
    print("differs:", key, "cpu", cpu.get(key), "cuda", cuda.get(key))
sys.exit(1 if differ or not cuda or "confirmed" not in cuda.values() else 0)
PY
