"""A pair's runs as one row: what ``rnnbench report`` tables and ``rnnbench compare`` judges when a
results file holds several runs of it (``rnnbench run --runs N``, each run a process of its own).

One rule for both: a pair with a run not ``ok`` is that run (the first such: its status and
message say what went wrong); else the last run's row with the median over the runs of each
figure, p20-p80 the widest over them, ``noisy`` if any run was, and every run's samples kept apart
(``samples_by_run``: ``compare.ratio_ci`` draws runs before samples, so the processes'
disagreement widens the interval). docs/methodology.md, "Runs: processes of their own".
"""

from __future__ import annotations

import pandas as pd

# Figures of a pair that are the median over its runs.
RUN_MEDIANS = ("ms_per_batch", "us_per_example", "tflops", "peak_fraction", "peak_tflops")


def latest(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, lane, machine, run) of a results frame: the last one written (a re-run
    supersedes). A frame without runs (not from :func:`~rnnbench.results.load_results`) is one run."""
    if "run" not in frame:
        frame = frame.assign(run=1)
    return frame.drop_duplicates(subset=["case_key", "lane", "env_id", "run"], keep="last")


def over_runs(frame: pd.DataFrame, pair: list[str], ranges: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per ``pair`` (the columns that name a case's lane) of ``frame``, which holds one row
    per run of it, in the order first measured. Besides the rule above: ``processes``, how many
    runs (not the row's ``runs``, its timed repetitions), and for each column of ``ranges`` its
    median with ``<name>_low`` and ``<name>_high``, the least and greatest over the runs (one run:
    its value; a pair with a failed run: that run's). Whole columns at a time: a pair at a time
    (a DataFrame each) made ``rnnbench report`` of a 600-row file markedly slower."""
    if frame.empty:
        return frame.assign(processes=pd.Series(dtype=int), samples_by_run=pd.Series(dtype=object),
                            **{f"{name}_{end}": pd.Series(dtype=float) for name in ranges for end in ("low", "high")})
    frame = frame.reset_index(drop=True)
    pair_of = frame.groupby(pair, sort=False, dropna=False).ngroup()  # (numbered as first measured)
    failed = frame["status"] != "ok"
    rows = frame.index.to_series()
    # The row that stands for its pair: the first failed run's, else the last run's.
    chosen = rows[failed].groupby(pair_of[failed]).first().reindex(range(pair_of.max() + 1))
    chosen = chosen.fillna(rows.groupby(pair_of).last()).astype(int)
    out = frame.loc[chosen.to_numpy()].reset_index(drop=True)
    by_pair = lambda column: column.groupby(pair_of)  # noqa: E731
    every_ok = ~by_pair(failed).any().to_numpy()
    out["processes"] = by_pair(rows).size().to_numpy()
    for name in (n for n in (*RUN_MEDIANS, *ranges) if n in frame):
        values = by_pair(pd.to_numeric(frame[name], errors="coerce"))
        if name in ranges:
            out[f"{name}_low"] = out[name].where(~every_ok, values.min().to_numpy())
            out[f"{name}_high"] = out[name].where(~every_ok, values.max().to_numpy())
        out[name] = out[name].where(~every_ok, values.median().to_numpy())
    if "p20_ms" in frame and "p80_ms" in frame:
        spread = every_ok & by_pair(frame[["p20_ms", "p80_ms"]].notna().all(axis=1)).all().to_numpy()
        out["p20_ms"] = out["p20_ms"].where(~spread, by_pair(frame["p20_ms"]).min().to_numpy())
        out["p80_ms"] = out["p80_ms"].where(~spread, by_pair(frame["p80_ms"]).max().to_numpy())
    if "noisy" in frame:
        noisy = by_pair(frame["noisy"].fillna(False).astype(bool)).any().to_numpy()
        out["noisy"] = out["noisy"].where(~every_ok, noisy)
    samples = frame["samples_ms"] if "samples_ms" in frame else pd.Series([None] * len(frame))
    samples = samples.map(lambda s: s if isinstance(s, list) else None)
    out["samples_by_run"] = by_pair(samples).agg(list).to_numpy()
    return out
