"""The ops that may hand back their input, judged by torch and by gradguard, op by input kind.

For each op of ``layouts.json``'s ``conversions`` and each kind of input (the dtype it
already has or another, its device, a contiguous or a transposed tensor, ``copy=True``),
a program writes in place into what the op returned for a sigmoid output that its backward
needs, then backpropagates. torch decides: the backward raises where the op handed back the
tensor or a view of it, and runs clean where it copied. gradguard is right where it reports
GG201 on the first and nothing on the second; silent on the first is a miss (a kind it
could not tell), a finding on the second a false alarm (there must be none).

    python bench/bench_conversions.py           # the table, as Markdown
    python bench/bench_conversions.py --json F  # and the judgements as JSON
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from gradguard import check_source

PROGRAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
layer = nn.Linear(8, 12)
x = torch.randn(4, 8)
gates = torch.sigmoid(layer(x))
gates64 = torch.sigmoid(layer.double()(x.double()))
gates16 = torch.sigmoid(layer.double()(x.double()).half())
template = torch.zeros(48)
t = {input}
w = {call}
w.mul_(2.0)
(gates.sum() + gates64.sum() + gates16.float().sum()).backward()
"""

# (op, input kind, the input, the call on it ``t``)
CASES = [
    *[(op, kind, source, f"t.{op}({arg})")
      for op, arg in (("reshape", "-1"), ("reshape_as", "template"), ("flatten", ""),
                      ("ravel", ""), ("contiguous", ""))
      for kind, source in (("contiguous", "gates"), ("transposed", "gates.t()"))],
    ("to", "same dtype", "gates", "t.to(torch.float32)"),
    ("to", "other dtype", "gates", "t.to(torch.float64)"),
    ("to", "same device", "gates", "t.to('cpu')"),
    ("to", "same device", "gates", "t.to(torch.device('cpu'))"),
    ("to", "same dtype and device", "gates", "t.to('cpu', torch.float32)"),
    ("to", "same dtype", "gates", "t.to(dtype=x.dtype)"),
    ("to", "copy=True", "gates", "t.to(torch.float32, copy=True)"),
    ("to", "same tensor kind", "gates", "t.to(template)"),
    ("to", "other tensor kind", "gates", "t.to(template.double())"),
    ("type", "same dtype", "gates", "t.type(torch.float32)"),
    ("type", "other dtype", "gates", "t.type(torch.float64)"),
    ("type_as", "same tensor kind", "gates", "t.type_as(template)"),
    ("type_as", "other tensor kind", "gates", "t.type_as(template.double())"),
    ("cpu", "same device", "gates", "t.cpu()"),
    ("float", "same dtype", "gates", "t.float()"),
    ("float", "other dtype", "gates64", "t.float()"),
    ("double", "same dtype", "gates64", "t.double()"),
    ("double", "other dtype", "gates", "t.double()"),
    ("half", "same dtype", "gates16", "t.half()"),
    ("half", "other dtype", "gates", "t.half()"),
    ("bfloat16", "other dtype", "gates", "t.bfloat16()"),
    ("asarray", "same dtype", "gates", "torch.asarray(t)"),
    ("asarray", "other dtype", "gates", "torch.asarray(t, dtype=torch.float64)"),
    ("as_tensor", "same dtype", "gates", "torch.as_tensor(t)"),
    ("as_tensor", "other dtype", "gates", "torch.as_tensor(t, dtype=torch.float64)"),
    ("F.dropout", "training=False", "gates", "F.dropout(t, 0.5, training=False)"),
    ("F.dropout", "p=0", "gates", "F.dropout(t, 0.0)"),
    ("nn.Dropout", "eval", "gates", "nn.Dropout(0.5).eval()(t)"),
    ("nn.Dropout", "train", "gates", "nn.Dropout(0.5)(t)"),
]


def judge(op: str, kind: str, source: str, call: str, folder: Path) -> dict:
    text = PROGRAM.format(input=source, call=call)
    path = folder / "program.py"
    path.write_text(text)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
    torch_says = "clean" if run.returncode == 0 else \
        "raises" if "modified by an inplace operation" in run.stderr else "error"
    found = any(f.code == "GG201" for f in check_source(text, str(path)))
    if torch_says == "raises":
        verdict = "found" if found else "missed"
    else:
        verdict = "false alarm" if found else "silent"
    return {"op": op, "kind": kind, "call": call.replace("t.", f"{source}.", 1)
            if call.startswith("t.") else call.replace("(t", f"({source}", 1),
            "torch": torch_says, "gradguard": "GG201" if found else "-", "verdict": verdict}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="write the judgements as JSON")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = [judge(*case, Path(folder)) for case in CASES]
    print("| op | input kind | call | torch | gradguard | |")
    print("|:--|:--|:--|:--|:--|:--|")
    for row in rows:
        print(f"| {row['op']} | {row['kind']} | `{row['call']}` | {row['torch']} | "
              f"{row['gradguard']} | {row['verdict']} |")
    counts = {verdict: sum(row["verdict"] == verdict for row in rows)
              for verdict in ("found", "silent", "missed", "false alarm")}
    agree = counts["found"] + counts["silent"]
    print(f"\n{len(rows)} cases: {agree} agree with torch ({counts['found']} aliases found, "
          f"{counts['silent']} copies left alone), {counts['missed']} missed, "
          f"{counts['false alarm']} false alarms")
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
