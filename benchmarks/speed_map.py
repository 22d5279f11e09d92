"""Where are our kernels faster than cuDNN, and where not? The ``triton`` lane (``backend="triton"``)
against ``torch-nn`` (cuDNN) side by side in one run, over batch and hidden sizes past the seed
suites' (batch 1 as in serving, 1024 as in large-batch training; hidden to 4096), each row verified
against the float64 reference before it is timed, as in any run.

    python benchmarks/speed_map.py OUT [--deadline SECONDS] [--jobs N] [--budget SECONDS]
        [--cells LIST] [--dtypes LIST] [--hidden-sizes LIST] [--batch-sizes LIST] [--table]

Two phases. First the kernels are compiled: each (cell, dtype, hidden_size) slice's ``rnnbench run``
on the ``triton`` lane alone, shortest budget, ``--jobs`` at a time (coverage.py's runner; rows in
``OUT/warm/``). Triton keeps what it compiles in its on-disk cache, so the second phase's first
calls load kernels instead of compiling them (on an H200, 2026-11-29: a first call took 2.2 s at
the median and 5.7 s at the 90th percentile in coverage.py's rows, 13 ms and 0.74 s in this
script's timed run after the warm phase; a timed call takes 0.1-100 ms). Then one ``rnnbench run``
times the whole grid, both lanes in turns in one process (``OUT/map.jsonl``, resumed where it
stopped if it exists). Past ``--deadline`` seconds (default 560; the warm phase gets at most a
third) each phase is stopped, its rows kept.

Writes and prints ``OUT/map.md``: per cell, dtype and mode, a table of batch_size x hidden_size
holding torch-nn's time over ours (above 1: ours is faster), or what became of our row
(:data:`MARKS`), and a count of the cells ours wins. ``--table``: that file alone, from the rows
already in ``OUT/map.jsonl`` (or ``map.jsonl.gz``), nothing run. Exit 0, or 2 with one line for bad
arguments.

Why: the seed suites stop at batch 128 and hidden 1024, and ``backend="auto"`` runs our kernels at
every size they can run (coverage.py), so a user needs to know where that is slower than cuDNN.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from rnnbench.errors import UsageError
from rnnbench.results import read_records

_spec = importlib.util.spec_from_file_location("coverage_script", Path(__file__).with_name("coverage.py"))
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

LANES = ("triton", "torch-nn")  # (ours, the baseline the ratio divides by)
CELLS = ("lstm", "gru", "rnn_tanh")
DTYPES = ("tf32", "bf16")  # (the dtypes)
HIDDEN_SIZES = (256, 1024, 2048, 4096)
BATCH_SIZES = (1, 16, 256, 1024)
SEQ_LEN = 50
GRID = {"cells": CELLS, "dtypes": DTYPES, "hidden_sizes": HIDDEN_SIZES, "batch_sizes": BATCH_SIZES}
# What the table shows where our row has no time: refused (backend="auto" runs cuDNN there).
MARKS = {"refused": "cuDNN", "failed": "FAIL", "mismatch": "MISMATCH", "oom": "oom", "missing": "·"}


def command(grid: dict, out_file: Path, lanes=LANES, budget: float = 0.2, resume: bool = True) -> list[str]:
    """The ``rnnbench run`` of ``grid`` (input = hidden, :data:`SEQ_LEN` steps, one layer, forward
    and train) on ``lanes``, appending to ``out_file`` (skipping the pairs it holds: ``resume``)."""
    return [sys.executable, "-m", "rnnbench", "run", "--lanes", ",".join(lanes),
            "--cell", ",".join(grid["cells"]), "--dtype", ",".join(grid["dtypes"]),
            "--hidden-size", ",".join(map(str, grid["hidden_sizes"])),
            "--batch-size", ",".join(map(str, grid["batch_sizes"])), "--seq-len", str(SEQ_LEN),
            "--input-size", "hidden", "--num-layers", "1", "--mode", ",".join(coverage.MODES),
            "--budget", str(budget), "--out", str(out_file)] + (["--resume"] if resume else [])


def warm_command(piece: dict, grid: dict, out: Path) -> list[str]:
    """One slice of the grid on the ``triton`` lane alone, shortest budget: it compiles its kernels,
    so it runs every pair again (a resumed map may be on another machine, with an empty cache)."""
    one = {**grid, "cells": (piece["cell"],), "dtypes": (piece["dtype"],), "hidden_sizes": (piece["hidden_size"],)}
    return command(one, out / f"{piece['name']}.jsonl", lanes=("triton",), budget=0.01, resume=False)


def table(rows: list[dict], grid: dict) -> list[str]:
    """Markdown: per cell, dtype and mode, batch_size down and hidden_size across, torch-nn's
    ``ms_per_batch`` over ours where both are ok, else our row's :data:`MARKS`; then how many
    ours is faster in, at least 0.9x as fast in, and timed at all. The latest row of a pair counts."""
    latest = {(r["cell"], r["dtype"], r["mode"], r["batch_size"], r["hidden_size"], r["lane"]): r for r in rows}
    lines, timed, won, near = [], 0, 0, 0
    for cell in grid["cells"]:
        for dtype in grid["dtypes"]:
            for mode in coverage.MODES:
                lines += ["", f"**{cell} {dtype} {mode}** (torch-nn's time / ours)", "",
                          "| batch \\ hidden | " + " | ".join(map(str, grid["hidden_sizes"])) + " |",
                          "|--:|" + "--:|" * len(grid["hidden_sizes"])]
                for batch in grid["batch_sizes"]:
                    cells = []
                    for hidden in grid["hidden_sizes"]:
                        ours, base = (latest.get((cell, dtype, mode, batch, hidden, lane)) for lane in LANES)
                        ratio = _ratio(ours, base)
                        if ratio is None:
                            cells.append(_mark(ours))
                            continue
                        timed, won, near = timed + 1, won + (ratio > 1), near + (ratio >= 0.9)
                        cells.append(f"**{ratio:.2f}**" if ratio > 1 else f"{ratio:.2f}")
                    lines.append(f"| {batch} | " + " | ".join(cells) + " |")
    head = [f"Ours faster than torch-nn in {won} of {timed} timed cells, at least 0.9x as fast in {near} "
            f"(torch-nn's ms_per_batch / ours; bold: ours faster; {', '.join(f'{v}: {k}' for k, v in MARKS.items())})."]
    return head + lines


def _mark(ours: dict | None) -> str:
    """What the table shows for our row without a ratio: :data:`MARKS`, or the status itself where
    the run did not attempt it (``coverage.NOT_RUN``: ``too_large``, ``unavailable``)."""
    if ours is None:
        return MARKS["missing"]
    kind = coverage.kind(ours)
    return ours["status"] if kind == "not_run" else MARKS[kind]


def _ratio(ours: dict | None, base: dict | None) -> float | None:
    if not (ours and base and ours["status"] == "ok" and base["status"] == "ok"):
        return None
    return base["ms_per_batch"] / ours["ms_per_batch"]


def read_map(out: Path) -> list[dict]:
    """The result rows of ``OUT/map.jsonl``, or of ``OUT/map.jsonl.gz`` where that is all there
    is (results kept in the repository): ``rnnbench.results.read_records`` (a torn last line
    skipped; UsageError for a file that is not rnnbench's, or not whole gzip)."""
    path = out / "map.jsonl"
    return list(read_records(path if path.exists() else out / "map.jsonl.gz", "result"))


def parse(argv: list[str]) -> tuple[Path, dict, int, float, float, bool]:
    """``(OUT, grid, jobs, deadline, budget, table_only)`` from the command line (module docstring).

    Raises:
        ValueError: the one line to print for bad arguments."""
    args, grid, numbers = list(argv), dict(GRID), {"--jobs": 14.0, "--deadline": 560.0, "--budget": 0.2}
    table_only = "--table" in args
    args = coverage.take_flags([a for a in args if a != "--table"], numbers, grid, "speed_map.py")
    if len(args) != 1 or args[0].startswith("-"):
        raise ValueError("usage: speed_map.py OUT [--deadline SECONDS] [--jobs N] [--budget SECONDS] [--cells LIST] "
                         "[--dtypes LIST] [--hidden-sizes LIST] [--batch-sizes LIST] [--table]")
    return Path(args[0]), grid, int(numbers["--jobs"]), numbers["--deadline"], numbers["--budget"], table_only


def main(argv: list[str]) -> int:
    """The command line (module docstring)."""
    try:
        out, grid, jobs, deadline, budget, table_only = parse(argv)
    except ValueError as e:
        return coverage.refuse(str(e))
    if table_only:
        if not (out / "map.jsonl").exists() and not (out / "map.jsonl.gz").exists():
            return coverage.refuse(f"speed_map.py: no map.jsonl in {out}")
        return _write_table(out, grid)
    try:
        (out / "warm").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return coverage.refuse(f"speed_map.py: cannot make {out}: {e.strerror or e}")
    stop_at = time.monotonic() + deadline
    coverage.run(grid, out / "warm", jobs, deadline / 3, command=warm_command)
    try:
        warm, _ = coverage.summary(coverage.read_rows(out / "warm"), grid)
    except UsageError as e:
        return coverage.refuse(f"speed_map.py: {e}")
    (out / "warm" / "summary.md").write_text("\n".join(warm) + "\n")
    with open(out / "map.log", "a") as log:
        try:
            subprocess.run(command(grid, out / "map.jsonl", budget=budget), stdout=log, stderr=subprocess.STDOUT,
                           env=coverage.engine_env(), timeout=max(1.0, stop_at - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.write("\nstopped at the deadline\n")
    return _write_table(out, grid)


def _write_table(out: Path, grid: dict) -> int:
    try:
        lines = table(read_map(out), grid)
    except UsageError as e:
        return coverage.refuse(f"speed_map.py: {e}")
    (out / "map.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
