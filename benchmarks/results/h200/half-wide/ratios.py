"""The sweep's pairs as ratios: fp16 operands' time over TF32 operands', per step and at 30 steps.

    python benchmarks/results/h200/half-wide/ratios.py benchmarks/results/h200/half-wide/sweep-b14dda0/plan_sweep-half_operands_wide.jsonl
"""
import json
import sys


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    by = {(r["cell"], r["batch_size"], r["hidden_size"], r["plan"]): r for r in rows if r.get("record") != "env"}
    steps, whole = [], []
    for (cell, b, h, plan), half in by.items():
        if plan != "forward_half_operands=True":
            continue
        tf32 = by[cell, b, h, "forward_half_operands=False"]
        s = half["forward_us_per_step"] / tf32["forward_us_per_step"]
        w = half["forward_ms"] / tf32["forward_ms"]
        steps.append(s)
        whole.append(w)
        print(f"{cell:5s} batch {b:<4d} hidden {h:<4d} µs a step {tf32['forward_us_per_step']:5.2f} -> "
              f"{half['forward_us_per_step']:5.2f} ({s:.2f}x)   30 steps {1e3 * tf32['forward_ms']:6.1f} -> "
              f"{1e3 * half['forward_ms']:6.1f} µs ({w:.2f}x)")
    print(f"{len(steps)} shapes: a step {min(steps):.2f}-{max(steps):.2f}x, 30 steps {min(whole):.2f}-{max(whole):.2f}x")


if __name__ == "__main__":
    main(sys.argv[1])
