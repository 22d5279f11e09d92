"""A pair's runs as one row: what ``rnnbench report`` tables and ``rnnbench compare`` judges when a
results file holds several runs of it (``rnnbench run --runs N``, each run a process of its own).

One rule for both: a pair with a run not ``ok`` is that run (the first such: its status and
message say what went wrong); else the last run's row with the median over the runs of each
figure, p20-p80 the widest over them, ``noisy`` if any run was, and every run's samples kept apart
(``samples_by_run``: ``compare.runs_ratio_ci`` draws runs before samples, so the processes'
disagreement widens the interval). docs/methodology.md, "Runs: processes of their own".
"""

from __future__ import annotations

import pandas as pd

# Figures of a pair that are the median over its runs.
RUN_MEDIANS = ("ms_per_batch", "us_per_example", "tflops", "peak_fraction", "peak_tflops")


def over_runs(frame: pd.DataFrame, pair: list[str], ranges: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per ``pair`` (the columns that name a case's lane) of ``frame``, which holds one row
    per run of it, in the order first measured. Besides the rule above: ``processes``, how many
    runs (not the row's ``runs``, its timed repetitions), and for each column of ``ranges`` its
    median with ``<name>_low`` and ``<name>_high``, the least and greatest over the runs (one run:
    its value; a pair with a failed run: that run's)."""
    parts = [_one_pair(runs, ranges) for _, runs in frame.groupby(pair, sort=False, dropna=False)]
    if not parts:
        return frame.assign(processes=pd.Series(dtype=int), samples_by_run=pd.Series(dtype=object),
                            **{f"{name}_{end}": pd.Series(dtype=float) for name in ranges for end in ("low", "high")})
    return pd.concat(parts, ignore_index=True)


def _one_pair(runs: pd.DataFrame, ranges: tuple[str, ...]) -> pd.DataFrame:
    failed = runs[runs["status"] != "ok"]
    row = (failed.iloc[[0]] if len(failed) else runs.iloc[[-1]]).copy()
    row["processes"] = len(runs)
    samples = runs["samples_ms"] if "samples_ms" in runs else [None] * len(runs)
    row["samples_by_run"] = [[s if isinstance(s, list) else None for s in samples]]
    for name in ranges:
        row[f"{name}_low"] = row[f"{name}_high"] = row[name]
    if len(failed):
        return row
    for name in (*RUN_MEDIANS, *ranges):
        if name in runs:
            row[name] = runs[name].median()
    for name in ranges:
        row[f"{name}_low"], row[f"{name}_high"] = runs[name].min(), runs[name].max()
    if "p20_ms" in runs and "p80_ms" in runs and runs[["p20_ms", "p80_ms"]].notna().all().all():
        row["p20_ms"], row["p80_ms"] = runs["p20_ms"].min(), runs["p80_ms"].max()
    if "noisy" in runs:
        row["noisy"] = runs["noisy"].fillna(False).astype(bool).any()
    return row
