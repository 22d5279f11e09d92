"""Two plans of a ``plan_sweep.py`` results file side by side: plan B's time over plan A's, µs a
step, forward and backward, for every shape both were measured on, then the range of each.

    python benchmarks/plan_ratios.py FILE PLAN_A PLAN_B
    python benchmarks/plan_ratios.py benchmarks/results/h200/pad-rows/to-the-end-fed2f9d/plan_sweep-pad_rows.jsonl default forward_pad_rows=True

PLAN_A and PLAN_B are the rows' ``plan`` fields as ``plan_sweep.py`` writes them (``default``
for the default plan, ``field=value`` for an override). A file with no pair of them, or a row of B
without its A, exits 2 with one line.
"""
from __future__ import annotations

import json
import sys

WAYS = ("forward", "backward")


def pairs(rows: list[dict], plan_a: str, plan_b: str) -> list[tuple[dict, dict]]:
    """``(row of A, row of B)`` for each shape (cell, batch_size, hidden_size, dtype) that has a row
    of B, in the file's order. Raises KeyError (the shape) where B's shape has no row of A, and
    ValueError where no row is B's."""
    by = {(r["cell"], r["batch_size"], r["hidden_size"], r["dtype"], r["plan"]): r for r in rows
          if r.get("record") != "env"}
    found = []
    for (*shape, plan), row in by.items():
        if plan == plan_b:
            if (*shape, plan_a) not in by:
                raise KeyError(tuple(shape))
            found.append((by[(*shape, plan_a)], row))
    if not found:
        raise ValueError(plan_b)
    return found


def lines(found: list[tuple[dict, dict]]) -> list[str]:
    """A line per shape (µs a step, A -> B, and B over A; or which plan failed there, as
    ``plan_sweep.py`` wrote its error), then a line per way with the range of the ratios of the
    shapes both plans ran."""
    out, ratios = [], {way: [] for way in WAYS}
    for a, b in found:
        line = f"{b['cell']:5s} {b['dtype']:5s} batch {b['batch_size']:<4d} hidden {b['hidden_size']:<5d}"
        failed = [f"{name} failed: {row['error'].splitlines()[0][:120]}" for name, row in (("A", a), ("B", b))
                  if "error" in row]
        if failed:
            out.append(line + "   " + "; ".join(failed))
            continue
        for way in WAYS:
            a_us, b_us = a[f"{way}_us_per_step"], b[f"{way}_us_per_step"]
            ratios[way].append(b_us / a_us)
            line += f"   {way} µs a step {a_us:5.2f} -> {b_us:5.2f} ({b_us / a_us:.2f}x)"
        out.append(line)
    return out + [f"{len(r)} shapes, {way}: a step {min(r):.2f}-{max(r):.2f}x" if r else f"0 shapes, {way}"
                  for way, r in ratios.items()]


def main(argv: list[str]) -> int:
    """The command line (module docstring); returns the exit status, 2 with one line on stderr
    for bad arguments or a file without the pairs asked for."""
    if len(argv) != 3:
        return _refuse("usage: plan_ratios.py FILE PLAN_A PLAN_B")
    path, plan_a, plan_b = argv
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        found = pairs(rows, plan_a, plan_b)
    except OSError as e:
        return _refuse(f"plan_ratios.py: cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        return _refuse(f"plan_ratios.py: {path} is not JSON lines: {e}")
    except KeyError as e:
        cell, batch, hidden, dtype = e.args[0]
        return _refuse(f"plan_ratios.py: no row with plan {plan_a!r} for {cell} {dtype} batch {batch} hidden {hidden}")
    except ValueError:
        return _refuse(f"plan_ratios.py: no pair of plans {plan_a!r} and {plan_b!r} in {path}")
    print("\n".join(lines(found)))
    return 0


def _refuse(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
