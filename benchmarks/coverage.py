"""Does every size a user may ask of our kernels either run right or refuse cleanly? The engine's
``triton`` lane (``backend="triton"``: a refusal is an error row that says why, never a silent
PyTorch run) over a grid of cells, dtypes, batch and hidden sizes far wider than the seed suites',
each row verified against the float64 reference before its (short) timing, as in any run.

    python benchmarks/coverage.py OUT [--quick] [--jobs N] [--deadline SECONDS]
        [--cells LIST] [--dtypes LIST] [--hidden-sizes LIST] [--batch-sizes LIST]

Runs one ``rnnbench run`` process per (cell, dtype, hidden_size) slice, ``--jobs`` at a time
(default 14: the GPU is shared, each process compiles its own kernels on a core), the widest
hidden sizes first, each appending to ``OUT/<slice>.jsonl``; past ``--deadline`` seconds no new
slice starts and the running ones are stopped (their rows so far kept). Then writes and prints
``OUT/summary.md``: per cell, dtype and mode, the rows ``ok``, ``refused`` (the kernels said they
cannot run the call: under ``backend="auto"`` PyTorch runs it, with a warning), ``failed`` (any
other error: a crash a user would meet), ``mismatch``, ``oom``, ``not_run`` (the engine did not
attempt it: ``too_large`` for the memory free, ``unavailable``) and ``missing`` (not reached), then
every failed and mismatched row. Exit 0 when nothing failed or mismatched, 1 otherwise, 2 with one
line for bad arguments. ``--quick``: a few small sizes (the CPU under ``TRITON_INTERPRET=1``);
``--cells`` and the rest (comma lists): that part of the grid only.

Why: plans are chosen by rules measured on a few shapes, and a rule's edge can ask more of the
GPU than it has (the transpose backward's shared memory at hidden 2560 in TF32, 2026-11-29:
``OutOfResources`` at launch, a traceback for the user).
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rnnbench.errors import UsageError, check_choice
from rnnbench.results import read_records

CELLS = ("lstm", "gru", "rnn_tanh")
DTYPES = ("fp32", "tf32", "bf16", "fp16")
MODES = ("forward", "train")
# Around the planner's edges (plans.py): FMA units to 128, split-K to 768, the gate split from 576
# (multiples of 8) to 4096, wider resident and on-chip tiles below 1024, and past them.
HIDDEN_SIZES = (1, 37, 129, 500, 650, 1000, 1500, 2049, 2560, 3000, 4096, 5000)
BATCH_SIZES = (1, 3, 20, 64, 128, 256, 1024)
SEQ_LEN, INPUT_SIZE = 5, 37  # (input ≠ hidden; five steps: the recurrence runs past its first)
QUICK = {"cells": CELLS, "dtypes": ("fp32",), "hidden_sizes": (3, 37), "batch_sizes": (1, 3)}
FULL = {"cells": CELLS, "dtypes": DTYPES, "hidden_sizes": HIDDEN_SIZES, "batch_sizes": BATCH_SIZES}
REFUSED = "cannot run this call"  # (nn.py's message for backend="triton")
KINDS = ("ok", "refused", "failed", "mismatch", "oom", "not_run", "missing")
NOT_RUN = ("too_large", "unavailable")  # (rnnbench.runner's statuses of a case it did not attempt)


def slices(grid: dict) -> list[dict]:
    """One ``rnnbench run`` per (cell, dtype, hidden_size), widest hidden first (the slowest
    to compile and verify start first): ``{"name", "cell", "dtype", "hidden_size"}``."""
    return [{"name": f"{cell}-{dtype}-H{hidden}", "cell": cell, "dtype": dtype, "hidden_size": hidden}
            for hidden, cell, dtype in itertools.product(sorted(grid["hidden_sizes"], reverse=True), grid["cells"],
                                                         grid["dtypes"])]


def command(piece: dict, grid: dict, out: Path) -> list[str]:
    """The ``rnnbench run`` of one slice: every batch size and mode, the ``triton`` lane only, the
    shortest timing budget (the verification is the point)."""
    return [sys.executable, "-m", "rnnbench", "run", "--lanes", "triton", "--cell", piece["cell"],
            "--dtype", piece["dtype"], "--hidden-size", str(piece["hidden_size"]),
            "--batch-size", ",".join(map(str, grid["batch_sizes"])), "--seq-len", str(SEQ_LEN),
            "--input-size", str(INPUT_SIZE), "--num-layers", "1", "--mode", ",".join(MODES), "--budget", "0.01",
            "--out", str(out / f"{piece['name']}.jsonl")]


def kind(row: dict) -> str:
    """Which of :data:`KINDS` a result row is."""
    status = row["status"]
    if status == "error":
        return "refused" if REFUSED in row.get("message", "") else "failed"
    if status in NOT_RUN:
        return "not_run"
    return status if status in KINDS else "failed"


def expected(grid: dict) -> list[tuple]:
    """Every (cell, dtype, mode, batch_size, hidden_size) the grid asks for."""
    return list(itertools.product(grid["cells"], grid["dtypes"], MODES, grid["batch_sizes"], grid["hidden_sizes"]))


def summary(rows: list[dict], grid: dict) -> tuple[list[str], bool]:
    """Markdown lines (a count per cell, dtype and mode of each of :data:`KINDS`, then every
    failed and mismatched row) and whether none is. The last row of a pair counts (a slice run
    again replaces it)."""
    latest = {(r["cell"], r["dtype"], r["mode"], r["batch_size"], r["hidden_size"]): r for r in rows}
    counts: dict[tuple, Counter] = {}
    for key in expected(grid):
        row = latest.get(key)
        counts.setdefault(key[:3], Counter())[kind(row) if row else "missing"] += 1
    lines = ["| cell | dtype | mode | " + " | ".join(KINDS) + " |", "|:--|:--|:--|" + "--:|" * len(KINDS)]
    lines += [f"| {cell} | {dtype} | {mode} | " + " | ".join(str(c[k]) for k in KINDS) + " |"
              for (cell, dtype, mode), c in counts.items()]
    bad = [r for r in latest.values() if kind(r) in ("failed", "mismatch")]
    lines += ["", f"{len(bad)} rows failed or mismatched" + (":" if bad else ".")]
    lines += [f"- {r['cell']} {r['dtype']} {r['mode']} batch {r['batch_size']} hidden {r['hidden_size']}: "
              f"{r['status']}: {r.get('message', '')[:200]}" for r in bad]
    return lines, not bad


def run(grid: dict, out: Path, jobs: int, deadline: float, command=command) -> None:
    """Every slice's ``rnnbench run`` (``command(piece, grid, out)``), ``jobs`` at a time, each with
    its output in ``OUT/<slice>.log``; none started past ``deadline`` seconds, and those running
    then stopped."""
    stop_at = time.monotonic() + deadline
    env = engine_env()

    def one(piece: dict) -> None:
        left = stop_at - time.monotonic()
        if left <= 0:
            return
        with open(out / f"{piece['name']}.log", "w") as log:
            try:
                subprocess.run(command(piece, grid, out), stdout=log, stderr=subprocess.STDOUT, env=env, timeout=left)
            except subprocess.TimeoutExpired:
                log.write("\nstopped at the deadline\n")

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, slices(grid)))


def engine_env() -> dict:
    """This environment with the package's ``src`` first on ``PYTHONPATH`` (``python -m rnnbench``
    from a checkout, installed or not)."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (src, os.environ.get("PYTHONPATH"))))}


def read_rows(out: Path) -> list[dict]:
    """The result rows of every ``OUT/*.jsonl``, in file order (``rnnbench.results.read_records``:
    a torn last line skipped; UsageError for a file that is not rnnbench's)."""
    return [row for path in sorted(out.glob("*.jsonl")) for row in read_records(path, "result")]


GRID_FLAGS = {"--cells": "cells", "--dtypes": "dtypes", "--hidden-sizes": "hidden_sizes",
              "--batch-sizes": "batch_sizes"}


def parse(argv: list[str]) -> tuple[Path, dict, int, float]:
    """``(OUT, grid, jobs, deadline)`` from the command line (module docstring).

    Raises:
        ValueError: the one line to print for bad arguments."""
    args, grid = list(argv), dict(FULL)
    if "--quick" in args:
        args.remove("--quick")
        grid = dict(QUICK)
    numbers = {"--jobs": 14.0, "--deadline": 540.0}
    args = take_flags(args, numbers, grid, "coverage.py")
    jobs, deadline = int(numbers["--jobs"]), numbers["--deadline"]
    if len(args) != 1 or args[0].startswith("-"):
        raise ValueError("usage: coverage.py OUT [--quick] [--jobs N] [--deadline SECONDS] [--cells LIST] "
                         "[--dtypes LIST] [--hidden-sizes LIST] [--batch-sizes LIST]")
    return Path(args[0]), grid, jobs, deadline


def take_flags(args: list[str], numbers: dict, grid: dict, script: str) -> list[str]:
    """``args`` without the flags it takes: each flag of ``numbers`` (flag -> its default) set to the
    positive number given, each of :data:`GRID_FLAGS` into ``grid`` (:func:`choices`). Raises
    ValueError (the line to print, after ``script``) for a flag without a value or a bad value."""
    args = list(args)
    flags = {**dict.fromkeys(numbers), **GRID_FLAGS}
    while any(a in flags for a in args):
        i = next(i for i, a in enumerate(args) if a in flags)
        if i + 1 == len(args):
            raise ValueError(f"{script}: {args[i]} takes a value")
        flag, value = args[i], args[i + 1]
        del args[i:i + 2]
        if flag in GRID_FLAGS:
            grid[GRID_FLAGS[flag]] = choices(flag, value, FULL[GRID_FLAGS[flag]], script)
            continue
        try:
            numbers[flag] = float(value)
        except ValueError:
            numbers[flag] = 0.0
        if numbers[flag] <= 0:
            raise ValueError(f"{script}: {flag} takes a positive number, got {value!r}")
    return args


def choices(flag: str, value: str, full: tuple, script: str = "coverage.py") -> tuple:
    """The comma list ``value`` of ``flag``: names from ``full``, or positive sizes where ``full``
    holds sizes. Raises ValueError (the line to print, after ``script``) for anything else."""
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(full[0], int):
        if not items or not all(v.isdigit() and int(v) > 0 for v in items):
            raise ValueError(f"{script}: {flag} takes positive whole numbers, got {value!r}")
        return tuple(int(v) for v in items)
    try:
        for item in items or (value,):
            check_choice(flag[2:], item, full)
    except UsageError as e:
        raise ValueError(f"{script}: {e}") from None
    return items


def main(argv: list[str]) -> int:
    """The command line (module docstring)."""
    try:
        out, grid, jobs, deadline = parse(argv)
    except ValueError as e:
        return refuse(str(e))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return refuse(f"coverage.py: cannot make {out}: {e.strerror or e}")
    run(grid, out, jobs, deadline)
    try:
        rows = read_rows(out)
    except UsageError as e:
        return refuse(f"coverage.py: {e}")
    lines, clean = summary(rows, grid)
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if clean else 1


def refuse(message: str) -> int:
    print(message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
