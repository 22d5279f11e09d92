"""A plan_sweep file's pairs of plans as ratios: plan B's time over plan A's, µs a step forward and backward.

    python benchmarks/results/h200/pad-rows/ratios.py FILE PLAN_A PLAN_B
    python benchmarks/results/h200/pad-rows/ratios.py benchmarks/results/h200/pad-rows/to-the-end-fed2f9d/plan_sweep-pad_rows.jsonl default forward_pad_rows=True
    python benchmarks/results/h200/pad-rows/ratios.py benchmarks/results/h200/pad-rows/backward-29d10d6/plan_sweep-pad_rows_backward.jsonl backward_pad_rows=False default

PLAN_A and PLAN_B are the ``plan`` fields of the rows (``default`` for ``{}``).
"""
import json
import sys


def main(path: str, plan_a: str, plan_b: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    by = {(r["cell"], r["batch_size"], r["hidden_size"], r["dtype"], r["plan"]): r for r in rows
          if r.get("record") != "env"}
    ratios = {"forward": [], "backward": []}
    for (cell, b, h, dtype, plan), row_b in by.items():
        if plan != plan_b:
            continue
        row_a = by[cell, b, h, dtype, plan_a]
        line = f"{cell:5s} {dtype:5s} batch {b:<4d} hidden {h:<5d}"
        for way, r in ratios.items():
            a_us, b_us = row_a[f"{way}_us_per_step"], row_b[f"{way}_us_per_step"]
            r.append(b_us / a_us)
            line += f"   {way} µs a step {a_us:5.2f} -> {b_us:5.2f} ({b_us / a_us:.2f}x)"
        print(line)
    for way, r in ratios.items():
        print(f"{len(r)} shapes, {way}: a step {min(r):.2f}-{max(r):.2f}x")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: ratios.py FILE PLAN_A PLAN_B")
    try:
        main(*sys.argv[1:4])
    except OSError as e:
        sys.exit(f"ratios.py: cannot read {sys.argv[1]}: {e.strerror}")
    except KeyError as e:
        sys.exit(f"ratios.py: no row with plan {sys.argv[2]!r} beside {e.args[0]}")
    except ValueError:
        sys.exit(f"ratios.py: no pair of plans {sys.argv[2]!r} and {sys.argv[3]!r} in {sys.argv[1]}")
