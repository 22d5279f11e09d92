"""Each seed row's ratios in two engine results files, side by side (a record of how
``against-a83ec95.txt`` was made, not a tool: arguments unchecked).

    python ratios.py OLD.jsonl NEW.jsonl

Per case (cell, batch_size, hidden_size, num_layers, seq_len, dtype, mode): torch-nn / triton
(eager) and torch-nn-graph / triton-graph (graphed), ms per batch of the rows with status ok, in
OLD and in NEW; ``<`` marks a NEW ratio under 0.9.
"""

import json
import sys


def load(path):
    by_case = {}
    for line in open(path):
        r = json.loads(line)
        if "lane" not in r or r.get("status") != "ok":
            continue
        key = (r["cell"], r["batch_size"], r["hidden_size"], r["num_layers"], r["seq_len"], r["dtype"], r["mode"])
        by_case.setdefault(key, {})[r["lane"]] = r["ms_per_batch"]
    return by_case


def ratio(runs, key, baseline, lane):
    try:
        return runs[key][baseline] / runs[key][lane]
    except KeyError:
        return float("nan")


old, new = load(sys.argv[1]), load(sys.argv[2])
print("case | eager old | eager new | graph old | graph new")
for key in sorted(new):
    e0, e1 = ratio(old, key, "torch-nn", "triton"), ratio(new, key, "torch-nn", "triton")
    g0, g1 = ratio(old, key, "torch-nn-graph", "triton-graph"), ratio(new, key, "torch-nn-graph", "triton-graph")
    flag = " <" if e1 < 0.9 or g1 < 0.9 else ""
    print(" ".join(map(str, key)), f"| {e0:.2f} | {e1:.2f} | {g0:.2f} | {g1:.2f}{flag}")
