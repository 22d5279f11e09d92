"""µs a call of triton (eager) and triton-graph, base beside new, each run; and the eager ratio to torch-nn."""
import gzip, json, sys, glob, collections
d, s = sys.argv[1], sys.argv[2]
rows = collections.defaultdict(dict)
for path in sorted(glob.glob(f"{d}/{s}-*-*.jsonl*")):
    tree, run = path.split("/")[-1].split(".")[0].split("-")[1:3]
    for line in (gzip.open if path.endswith(".gz") else open)(path, "rt"):
        r = json.loads(line)
        if r.get("status") != "ok" or "lane" not in r:
            continue
        key = (r["cell"], r["batch_size"], r["dtype"], r["mode"])
        rows[key][(tree, run, r["lane"])] = r["ms_per_batch"] * 1e3
print("case | triton µs base / new (runs 1, 2) | x torch-nn base / new | triton-graph µs base / new")
for key in sorted(rows):
    v = rows[key]
    f = lambda lane, t: " ".join(f"{v.get((t, r, lane), float('nan')):.1f}" for r in sorted({k[1] for k in v}))
    x = lambda t: " ".join(f"{v.get((t, r, 'torch-nn'), float('nan')) / v.get((t, r, 'triton'), float('nan')):.2f}" for r in sorted({k[1] for k in v}))
    print(f"{' '.join(map(str, key))} | {f('triton', 'base')} / {f('triton', 'new')} | {x('base')} / {x('new')} | {f('triton-graph', 'base')} / {f('triton-graph', 'new')}")
