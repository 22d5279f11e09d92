"""Tables of language-model result rows (``{"record": "lm", ...}``)."""

from __future__ import annotations

import os
from typing import Iterable

import pandas as pd

# (row field, column heading, decimals or None to keep as is), in reading order.
COLUMNS = (
    ("dataset", "dataset", None),
    ("preset", "preset", None),
    ("lane", "lane", None),
    ("rnn", "rnn", None),
    ("precision", "amp/precision", None),
    ("epoch", "epoch", None),
    ("steps", "steps", None),
    ("world_size", "processes", None),
    ("train_wps", "train words/s", 0),
    ("train_wps_per_rank", "train words/s per process", 0),
    ("scaling_efficiency", "scaling efficiency", 2),
    ("eval_wps", "eval words/s", 0),
    ("ms_per_batch", "ms/batch", 2),
    ("train_loss", "train loss", 3),
    ("valid_ppl", "valid ppl", 2),
    ("test_ppl", "test ppl", 2),
    ("peak_mem_mib", "peak MiB", 0),
    ("hardware", "device/gpu", None),
)


def _hardware(row: dict, envs: dict[str, dict]) -> str:
    """The GPU's name for a CUDA row (from its env record), else ``cpu``."""
    if row.get("device") == "cuda":
        return envs.get(row.get("env_id"), {}).get("gpu") or "cuda"
    return row.get("device") or "cpu"


# Columns only data-parallel runs fill: left out of a table where every run had one process.
PARALLEL_COLUMNS = ("processes", "train words/s per process", "scaling efficiency")
# What must match for a one-process row to be the baseline of a data-parallel one.
SAME_RUN_FIELDS = ("dataset", "preset", "lane", "rnn", "precision", "emb_size", "hidden_size",
                   "num_layers", "batch_size", "bptt", "device", "hardware", "epoch")


def scaling_efficiency(row: dict, singles: list[dict]) -> float | None:
    """``train_wps / (world_size × train_wps of one process)``: 1.0 is perfect scaling.

    The one-process figure is the first of ``singles`` (rows with ``world_size`` 1, or none) of
    the same configuration, hardware and epoch; None when there is none. Compare runs of one
    session only: another session's GPU may run at other clocks.
    """
    size = row.get("world_size") or 1
    if size == 1 or not row.get("train_wps"):
        return None
    for single in singles:
        if all(single.get(f) == row.get(f) for f in SAME_RUN_FIELDS) and single.get("train_wps"):
            return row["train_wps"] / (size * single["train_wps"])
    return None


def latest_rows(records: list[dict]) -> list[dict]:
    """The lm rows of ``records`` with only the latest row of each (run, epoch, segment).

    A run killed after an epoch's row was written but before its checkpoint was trains that
    epoch again on ``--resume`` and appends a second row for it; both stay in the file (nothing
    measured is dropped), and the later one is the one the run's next epochs continue from.
    Rows are keyed by ``(run_id, epoch, start_step)``: the two parts of an epoch cut by
    ``--max-steps`` and resumed have different ``start_step`` and are both kept. Rows without a
    ``run_id`` (files written before it existed) are all kept. File order is preserved.
    """
    rows = [r for r in records if r.get("record") == "lm"]

    def key(index: int, row: dict):
        if row.get("run_id") is None or row.get("start_step") is None:
            return ("unkeyed", index)
        return (row["run_id"], row.get("epoch"), row["start_step"])

    last = {key(i, row): i for i, row in enumerate(rows)}
    return [row for i, row in enumerate(rows) if last[key(i, row)] == i]


def lm_table(records: list[dict]) -> pd.DataFrame:
    """One line per epoch row of ``records``, with the columns a reader compares.

    ``records`` may mix env records, micro-benchmark rows and lm rows (as read from one or more
    results files); only ``record == "lm"`` rows become lines (the latest of an epoch that a
    resumed run trained twice, see :func:`latest_rows`), and env records supply the GPU name. Columns: dataset, preset, lane, rnn, amp/precision, epoch, steps, train words/s,
    eval words/s (both synchronised, warm-up excluded), ms/batch (training), train loss (nats
    per token), valid ppl, test ppl (final epoch only), peak MiB (CUDA only), device/gpu; where a
    run had several processes also processes, train words/s per process and scaling efficiency
    (:func:`scaling_efficiency`). Empty cells are None/NaN.
    """
    envs = {r["env_id"]: r for r in records if r.get("record") == "env" and "env_id" in r}
    rows = [{**row, "hardware": _hardware(row, envs)} for row in latest_rows(records)]
    singles = [row for row in rows if (row.get("world_size") or 1) == 1]
    lines = []
    for row in rows:
        peak = row.get("peak_mem_bytes")
        full = {**row, "world_size": row.get("world_size") or 1,
                "scaling_efficiency": scaling_efficiency(row, singles),
                "peak_mem_mib": None if peak is None else peak / 2**20}
        line = {}
        for field, heading, decimals in COLUMNS:
            value = full.get(field)
            if decimals is not None and isinstance(value, (int, float)) and value is not None:
                value = round(float(value), decimals) if decimals else int(round(value))
            line[heading] = value
        lines.append(line)
    frame = pd.DataFrame(lines, columns=[heading for _, heading, _ in COLUMNS])
    if not (frame["processes"] > 1).any():
        frame = frame.drop(columns=list(PARALLEL_COLUMNS))
    return frame


def read_lm_records(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Every record (env and lm rows) of the given results files, in file order.

    Raises:
        UsageError: a file that is not an rnnbench results file.
    """
    from ..results import read_records

    return [record for path in paths for record in read_records(path)]


def split_constant(frame: pd.DataFrame, keep: tuple[str, ...] = ("epoch",)) -> tuple[pd.DataFrame, str]:
    """``frame`` without the text columns that hold one value throughout, and those values
    joined with `` · `` for a title (a run's lane, rnn, precision... do not need a column each)."""
    def is_constant_text(column: str) -> bool:
        values = set(frame[column].tolist())
        return len(values) == 1 and all(v is None or isinstance(v, str) for v in values)

    constant = [c for c in frame.columns if c not in keep and len(frame) and is_constant_text(c)]
    label = " · ".join(str(frame[c].iloc[0]) for c in constant if frame[c].iloc[0] is not None)
    return frame.drop(columns=constant), label


def rich_table(frame: pd.DataFrame, title: str | None = None):
    """A ``rich.table.Table`` of :func:`lm_table`'s frame, thousands separated, Nones as ``-``."""
    from rich.table import Table

    table = Table(title=title)
    numeric = {"train words/s", "train words/s per process", "eval words/s", "peak MiB"}
    for column in frame.columns:
        table.add_column(column, justify="right" if column not in ("dataset", "preset", "lane", "rnn",
                                                                    "amp/precision", "device/gpu") else "left")
    for values in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, values):
            if value is None or (isinstance(value, float) and pd.isna(value)):
                cells.append("-")
            elif column in numeric:
                cells.append(f"{value:,.0f}")
            else:
                cells.append(str(value))
        table.add_row(*cells)
    return table
