"""Each row's ratios in engine results files, old beside new, and the issue's counts (a record of how
the ``*against-44dea8c.txt`` files were made, not a tool: arguments unchecked).

    python ratios.py OLD.jsonl[.gz] NEW.jsonl[.gz] [NEW2.jsonl ...]

Per case (cell, batch_size, seq_len, hidden_size, num_layers, dtype, mode): torch-nn / triton
(eager) and torch-nn-graph / triton-graph (graphed), ms per batch of the rows with status ok, in
OLD and in NEW (several NEW files are merged, later ones adding rows); ``<`` marks a NEW ratio under
0.9. Then per dtype and mode: NEW rows at least 0.9x, 1x, 1.5x and 2x, eager and graphed.
"""

import gzip
import json
import sys


def load(paths):
    by_case = {}
    for path in paths:
        for line in (gzip.open if path.endswith(".gz") else open)(path, "rt"):
            r = json.loads(line)
            if "lane" not in r or r.get("status") != "ok":
                continue
            key = (r["cell"], r["batch_size"], r["seq_len"], r["hidden_size"], r["num_layers"], r["dtype"], r["mode"])
            by_case.setdefault(key, {})[r["lane"]] = r["ms_per_batch"]
    return by_case


def ratio(runs, key, baseline, lane):
    try:
        return runs[key][baseline] / runs[key][lane]
    except KeyError:
        return float("nan")


old, new = load(sys.argv[1:2]), load(sys.argv[2:])
print("case | eager old | eager new | graph old | graph new")
counts = {}
for key in sorted(new):
    e0, e1 = ratio(old, key, "torch-nn", "triton"), ratio(new, key, "torch-nn", "triton")
    g0, g1 = ratio(old, key, "torch-nn-graph", "triton-graph"), ratio(new, key, "torch-nn-graph", "triton-graph")
    flag = " <" if e1 < 0.9 or g1 < 0.9 else ""
    print(" ".join(map(str, key)), f"| {e0:.2f} | {e1:.2f} | {g0:.2f} | {g1:.2f}{flag}")
    c = counts.setdefault(key[5:], {"rows": 0})
    c["rows"] += 1
    for name, value in (("eager", e1), ("graph", g1)):
        for least in (0.9, 1.0, 1.5, 2.0):
            c[f"{name}>={least}"] = c.get(f"{name}>={least}", 0) + (value >= least)
print()
for (dtype, mode), c in sorted(counts.items()):
    print(dtype, mode, " ".join(f"{k} {v}" for k, v in c.items()))
