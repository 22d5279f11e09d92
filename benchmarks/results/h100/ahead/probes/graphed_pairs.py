"""Graphed forwards (``triton-graph``, µs a call) of the base tree beside the new one, per device call
(each call one machine, the trees' processes alternated): the mean of each tree's runs and new/base.
From this directory: python probes/graphed_pairs.py ab-2404ef9 probe-4b01305"""
import collections
import glob
import gzip
import json
import sys

print("call | case | base µs (runs) | new µs (runs) | new/base")
for call in sys.argv[1:]:
    got = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(glob.glob(f"{call}/*-*-*.jsonl.gz")):
        tree = path.split("/")[-1].split("-")[1]
        for line in gzip.open(path, "rt"):
            r = json.loads(line)
            if r.get("lane") == "triton-graph" and r.get("status") == "ok" and r["mode"] == "forward":
                got[(r["cell"], r["hidden_size"], r["batch_size"], r["dtype"])][tree].append(r["ms_per_batch"] * 1e3)
    for key in sorted(got):
        b, n = got[key]["base"], got[key]["new"]
        mb, mn = sum(b) / len(b), sum(n) / len(n)
        print(f"{call} | {key[0]} H{key[1]} B{key[2]} {key[3]} | {mb:.1f} ({' '.join(f'{v:.1f}' for v in b)}) | "
              f"{mn:.1f} ({' '.join(f'{v:.1f}' for v in n)}) | {mn / mb:.2f}")
