import gzip, json, sys, statistics
from collections import defaultdict
d = sys.argv[1]
rows = defaultdict(list)  # (form, case, lane) -> ms list (one per round)
for form in ("old", "new"):
    for g in ("G1", "G2"):
        for line in gzip.open(f"{d}/ab-{form}-{g}.jsonl.gz", "rt"):
            r = json.loads(line)
            if r.get("record") != "result": continue
            if r["status"] != "ok": print("NOT OK", form, r["case_key"], r["lane"], r["status"], r["message"][:80]); continue
            rows[(form, r["case_key"], r["lane"])].append(r["ms_per_batch"] * 1e3)
cases = sorted({k[1] for k in rows})
print(f"{'case':58s} {'old tri':>8s} {'new tri':>8s} {'new/old':>7s}  {'old tnn':>8s} {'new tnn':>8s}  {'ratio old':>9s} {'ratio new':>9s}")
for c in cases:
    med = lambda f, l: statistics.median(rows[(f, c, l)])
    ot, nt, on, nn = med("old", "triton"), med("new", "triton"), med("old", "torch-nn"), med("new", "torch-nn")
    print(f"{c:58s} {ot:8.1f} {nt:8.1f} {nt/ot:7.3f}  {on:8.1f} {nn:8.1f}  {on/ot:9.2f} {nn/nt:9.2f}   rounds {[round(x,1) for x in rows[('old',c,'triton')]]} {[round(x,1) for x in rows[('new',c,'triton')]]}")
