"""A plan_sweep file's pairs of plans as ratios: plan B's time over plan A's, a step and at 30 steps.

    python benchmarks/results/h200/pad-rows/ratios.py FILE PLAN_A PLAN_B
    python benchmarks/results/h200/pad-rows/ratios.py benchmarks/results/h200/pad-rows/to-the-end-fed2f9d/plan_sweep-pad_rows.jsonl default forward_pad_rows=True

PLAN_A and PLAN_B are the ``plan`` fields of the rows (``default`` for ``{}``).
"""
import json
import sys


def main(path: str, plan_a: str, plan_b: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    by = {(r["cell"], r["batch_size"], r["hidden_size"], r["plan"]): r for r in rows if r.get("record") != "env"}
    steps = []
    for (cell, b, h, plan), row_b in by.items():
        if plan != plan_b:
            continue
        row_a = by[cell, b, h, plan_a]
        s = row_b["forward_us_per_step"] / row_a["forward_us_per_step"]
        w = row_b["forward_ms"] / row_a["forward_ms"]
        steps.append(s)
        print(f"{cell:5s} batch {b:<4d} hidden {h:<5d} forward µs a step {row_a['forward_us_per_step']:5.2f} -> "
              f"{row_b['forward_us_per_step']:5.2f} ({s:.2f}x)   30 steps {1e3 * row_a['forward_ms']:6.1f} -> "
              f"{1e3 * row_b['forward_ms']:6.1f} µs ({w:.2f}x)   backward a step {row_a['backward_us_per_step']:5.2f} "
              f"-> {row_b['backward_us_per_step']:5.2f}")
    print(f"{len(steps)} shapes: a step {min(steps):.2f}-{max(steps):.2f}x")


if __name__ == "__main__":
    main(*sys.argv[1:4])
