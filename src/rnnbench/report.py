"""Tables and plots from a results file, shaped like the seed tables.

One table per configuration (batch × seq × input × hidden × layers, dtype, loss, machine): rows are
(cell, lane), columns are Train (µs) and Forward only (µs) per example, the speedup of each
lane over a baseline lane measured in the same run (baseline time / lane time; > 1 is faster), and
per mode the achieved TFLOP/s and its percentage of the dense matmul peak measured in the same run
(blank for rows written before those fields existed). Published seed figures for the same
configuration are appended as labelled rows.
"""

from __future__ import annotations

import math

import pandas as pd

from .errors import UsageError
from .lanes import LANES
from .published import published_for
from .runs import latest, over_runs

GROUP = ["gpu", "device", "dtype", "loss", "batch_size", "seq_len", "input_size", "hidden_size", "num_layers",
         "lengths", "sort_lengths"]
MODE_COLUMNS = {"train": "Train (µs)", "forward": "Forward only (µs)"}


def combined(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per (case, lane, machine) over its runs (:func:`~rnnbench.runs.latest` of each), in
    the order first measured, with ``speedup``: ``baseline``'s time / the lane's in the same run
    (NaN where either is not ok), folded over the runs by :func:`rnnbench.runs.over_runs`
    (``processes``, the median of each figure and of ``speedup``, the speedups' range
    ``speedup_low``, ``speedup_high``; a pair with a run not ok is that run's row). Each run is a
    process of its own, so the range is how far a ratio moves between processes, which one run
    cannot show (docs/methodology.md)."""
    rows = latest(frame)
    if "us_per_example" not in rows:  # (no row ok)
        rows = rows.assign(us_per_example=float("nan"))
    key = ["case_key", "env_id", "run"]
    base = rows.loc[(rows["lane"] == baseline) & (rows["status"] == "ok"), key + ["us_per_example"]]
    rows = rows.merge(base.rename(columns={"us_per_example": "_base"}), on=key, how="left")
    rows["speedup"] = (rows["_base"] / rows["us_per_example"]).where(rows["status"] == "ok")
    return over_runs(rows.drop(columns="_base"), ["case_key", "lane", "env_id"], ranges=("speedup",))


def _title(config: dict) -> str:
    layers = "layer" if config["num_layers"] == 1 else "layers"
    machine = config["gpu"] if config["device"] == "cuda" else "CPU"
    lengths = ""
    if config.get("lengths"):
        lengths = f" · lengths {config['lengths']}{' sorted' if config.get('sort_lengths') else ' unsorted'}"
    return (f"batch {config['batch_size']} × seq {config['seq_len']} × input {config['input_size']} × "
            f"hidden {config['hidden_size']} × {config['num_layers']} {layers} · {config['dtype']} · "
            f"{config['loss']} loss{lengths} · {machine}")


def _cell_text(row: pd.Series | None) -> str:
    if row is None:
        return ""
    if row["status"] != "ok":
        return row["status"]
    warned = isinstance(row.get("warnings"), list) and bool(row.get("warnings"))
    return f"{row['us_per_example']:.1f}" + ("*" if row.get("noisy") else "") + ("†" if warned else "")


def _speedup(row) -> str:
    """A :func:`combined` row's speedup, and its range over the runs where there are several."""
    if row is None or pd.isna(row.get("speedup")):
        return ""
    text = f"{row['speedup']:.2f}×"
    if row.get("processes", 1) > 1 and row["speedup_low"] != row["speedup_high"]:
        text += f" ({row['speedup_low']:.2f}–{row['speedup_high']:.2f})"
    return text


def _useful(row) -> str:
    """Timesteps of real data per second (the sum of the lengths over the batch time)."""
    if row is None or row["status"] != "ok" or pd.isna(row.get("useful_timesteps_per_s")):
        return ""
    return f"{row['useful_timesteps_per_s']:,.0f}"


def _figure(row, field: str, scale: float = 1.0) -> str:
    """``row[field] * scale`` to 3 significant digits, or "" when the row is not ok or lacks the
    field (an old row, or a peak that could not be measured)."""
    if row is None or row["status"] != "ok" or pd.isna(row.get(field)):
        return ""
    return significant(row[field] * scale)


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits and no exponent: 0.000123, 45.2, 312, 1234."""
    if value <= 0 or not math.isfinite(value):
        return f"{value:g}"
    return f"{value:.{max(0, digits - 1 - math.floor(math.log10(value)))}f}"


def _lane_order(lane: str) -> tuple:
    names = list(LANES)
    return (names.index(lane) if lane in names else len(names), lane)


def group_table(group: pd.DataFrame, baseline: str, published: bool = True) -> pd.DataFrame:
    """The seed-shaped table of one configuration (see module docstring), from its
    :func:`combined` rows."""
    rows = []
    measured = group[group["status"] != "unavailable"]
    for cell in sorted(measured["cell"].unique()):
        cell_rows = measured[measured["cell"] == cell]
        by = {(r["lane"], r["mode"]): r for _, r in cell_rows.iterrows()}
        for lane in sorted(cell_rows["lane"].unique(), key=_lane_order):
            line = {"cell": cell, "lane": lane}
            for mode, column in MODE_COLUMNS.items():
                line[column] = _cell_text(by.get((lane, mode)))
            for mode in MODE_COLUMNS:
                line[f"{mode} × {baseline}"] = _speedup(by.get((lane, mode)))
            for mode in MODE_COLUMNS:
                line[f"{mode} TFLOP/s"] = _figure(by.get((lane, mode)), "tflops")
            for mode in MODE_COLUMNS:
                line[f"{mode} % of peak"] = _figure(by.get((lane, mode)), "peak_fraction", 100.0)
            if group.iloc[0].get("lengths"):  # variable length: what the padding costs shows here
                for mode in MODE_COLUMNS:
                    line[f"{mode} useful steps/s"] = _useful(by.get((lane, mode)))
            rows.append(line)
    if published:
        for pub in published_for(group.iloc[0].to_dict()):
            rows.append({"cell": pub["cell"], "lane": pub["lane"], MODE_COLUMNS["train"]: f"{pub['train']:.1f}",
                         MODE_COLUMNS["forward"]: f"{pub['forward']:.1f}"})
    table = pd.DataFrame(rows).fillna("")
    # Rows written before TFLOP/s was recorded have none: their columns would be blank throughout.
    empty = [c for c in table.columns if ("TFLOP/s" in c or "% of peak" in c) and not table[c].any()]
    return table.drop(columns=empty)


def _sources(group: pd.DataFrame) -> str:
    """The footnote naming where a table's [published] rows come from."""
    sources = sorted({p["source"] for p in published_for(group.iloc[0].to_dict())})
    return f"\n[published]: {'; '.join(sources)}. Another GPU and year; not our measurements.\n" if sources else ""


def _peak_note(group: pd.DataFrame) -> str:
    """The footnote giving the peak a table's "% of peak" divides by (a range when the table joins
    runs that measured it apart), or "" when no row has one."""
    if not {"peak_tflops", "peak_matmul_size"} <= set(group.columns):
        return ""
    peaks = group.loc[group["status"] == "ok", ["peak_tflops", "peak_matmul_size"]].dropna()
    if peaks.empty:
        return ""
    low, high = peaks["peak_tflops"].min(), peaks["peak_tflops"].max()
    value = significant(low) if low == high else f"{significant(low)}–{significant(high)}"
    sizes = "/".join(str(int(n)) for n in sorted(peaks["peak_matmul_size"].unique()))
    note = (f"\nPeak: {value} TFLOP/s, the best of a dense {sizes}³ {group.iloc[0]['dtype']} matmul timed "
            "in the same run.")
    # A row past the peak means the peak's few calls met a slower machine than the rows did
    # (another process on the CPU's cores, say): its % of peak is then no fraction of anything.
    # But not in fp32 on a GPU: a lane may compute fp32's products on tensor cores from split
    # operands (our 3xTF32 and 3xFP16) at fp32's accuracy, past the FMA units' matmul.
    over = group.loc[group["status"] == "ok", "peak_fraction"].dropna() if "peak_fraction" in group else ()
    if len(over) and over.max() > 1:
        first = group.iloc[0]
        if first["dtype"] == "fp32" and first.get("device") == "cuda":
            note += (f" Rows reach up to {over.max():.3g}× it: their products run on tensor cores from split "
                     "operands (3xTF32, 3xFP16: fp32's accuracy), past cuBLAS' fp32 matmul on the FMA units.")
        else:
            note += (f" Rows reach up to {over.max():.3g}× it: the peak was timed while the machine ran slower "
                     "than for them (another process?), so their % of peak means nothing; run again on a quiet "
                     "machine.")
    return note + "\n"


def _runs_note(group: pd.DataFrame) -> str:
    """The footnote saying a table's figures are over several runs, or "" for one run each."""
    runs = group.loc[group["status"] != "unavailable", "processes"]
    if runs.max() <= 1:
        return ""
    count = str(int(runs.max())) if runs.min() == runs.max() else f"{int(runs.min())}–{int(runs.max())}"
    return (f"\nRuns: {count}, each a process of its own: times are the medians over the runs, `×` the "
            "median of each run's ratio (its range in brackets).\n")


def tables(frame: pd.DataFrame, baseline: str = "torch-nn", published: bool = True) -> list[tuple[str, pd.DataFrame, str]]:
    """(title, table, footnote) for every configuration in the results, in the order first measured."""
    frame = combined(frame, baseline)
    out = []
    for _, group in frame.groupby(GROUP, sort=False, dropna=False):
        if (group["status"] == "unavailable").all():
            continue
        note = _runs_note(group) + _peak_note(group) + (_sources(group) if published else "")
        out.append((_title(group.iloc[0].to_dict()), group_table(group, baseline, published), note))
    return out


def markdown(frame: pd.DataFrame, baseline: str = "torch-nn", published: bool = True) -> str:
    """All tables as Markdown, with the legend the numbers need."""
    parts = [f"### {title}\n\n{table.to_markdown(index=False, disable_numparse=True)}\n{note}"
             for title, table, note in tables(frame, baseline, published)]
    legend = ("µs per example = median time per batch / batch_size; train = forward + backward from the loss. "
              f"`× {baseline}` = {baseline} time / lane time in the same run (> 1 is faster; over several "
              "runs the median of the runs' ratios, their range in brackets). "
              "TFLOP/s = the matmuls of the useful steps (2·m·n·k each, train 3× forward; element-wise "
              "work not counted) / median time; % of peak = of the Peak under the table. "
              "`*` = noisy (p20–p80 spread over 10 % of the median). `†` = the lane warned while built or "
              "first called (the row's `warnings`). `[published]` rows are the seeds' "
              "own figures from another GPU and year, quoted for context, not our measurements.")
    return "\n".join(parts + [legend])


def check_baseline(frame: pd.DataFrame, baseline: str) -> None:
    """Raise UsageError unless lane ``baseline`` has at least one ``ok`` row in ``frame`` (without
    one every speedup column would be empty); the message lists the lanes that have."""
    measured = frame.loc[frame["status"] == "ok", "lane"].unique()
    if baseline not in measured:
        lanes = ", ".join(sorted(measured, key=_lane_order)) or "none"
        raise UsageError(f"--baseline {baseline} has no measured (ok) rows in these files; "
                         f"lanes with rows: {lanes}")


# What tells two bars of the plot apart: the case (less its mode: train and forward are the two
# panels) and the machine. A label names each field whose value is not the same for every bar.
PLOT_FIELDS = ("cell", "batch_size", "seq_len", "input_size", "hidden_size", "num_layers", "dtype", "loss",
               "lengths", "sort_lengths", "device", "gpu")
LABEL_PREFIX = {"batch_size": "B", "seq_len": "T", "input_size": "I", "hidden_size": "H", "num_layers": "L"}


def plot_labels(rows: pd.DataFrame) -> pd.Series:
    """One x-axis label per row: the fields of :data:`PLOT_FIELDS` that differ among ``rows``
    (``lstm B64 I256 cuda NVIDIA H100 80GB HBM3``; a GPU of ``cpu``, i.e. none, is not spelled
    out), the cell when none differs, and the environment id when two environments share all the
    rest (e.g. two torch versions on one GPU model). Rows of one (configuration, machine) share a
    label; any two others never do."""
    shown = [f for f in PLOT_FIELDS if rows[f].nunique(dropna=False) > 1] or ["cell"]
    key = list(PLOT_FIELDS)
    # a configuration measured in several environments: only its bars name the environment
    several = rows.groupby(key, dropna=False)["env_id"].transform("nunique") > 1
    return pd.Series([" ".join([_label_part(f, r[f]) for f in shown if not (f == "gpu" and r[f] == "cpu")]
                               + ([_label_part("env_id", r["env_id"])] if many else []))
                      for (_, r), many in zip(rows.iterrows(), several)], index=rows.index)


def _label_part(field: str, value) -> str:
    if field == "env_id":
        return f"env {value}"
    if field == "lengths":
        return f"len {value}" if value else "full length"
    if field == "sort_lengths":
        return "sorted" if value else "unsorted"
    return f"{LABEL_PREFIX.get(field, '')}{value}"


def speedups(frame: pd.DataFrame, baseline: str = "torch-nn") -> dict[str, pd.DataFrame]:
    """Per mode, a table of ``baseline`` time / lane time (> 1 is faster; over several runs the
    median of each run's, :func:`combined`): one row per (configuration, machine) labelled by
    :func:`plot_labels`, one column per lane, in order of first appearance. A mode whose rows hold
    no ``baseline`` time is left out.

    Raises:
        UsageError: no row with status ok.
    """
    ok = combined(frame, baseline)
    ok = ok[ok["status"] == "ok"].copy()
    if ok.empty:
        raise UsageError("nothing to plot: the results hold no row with status ok")
    ok["label"] = plot_labels(ok)
    out = {}
    for mode in MODE_COLUMNS:
        part = ok[ok["mode"] == mode]
        table = part.pivot(index="label", columns="lane", values="speedup")
        if baseline not in table or table[baseline].isna().all():
            continue
        table = table.reindex(part["label"].unique())
        out[mode] = table[sorted(table.columns, key=_lane_order)]
    return out


def standing(frame: pd.DataFrame, baseline: str = "torch-nn", floor: float = 0.9) -> pd.DataFrame:
    """How each lane stands against ``baseline`` over every (configuration, mode, machine) where
    both measured ok (:func:`speedups`: baseline time / lane time, > 1 is faster), one row per lane:
    how many such rows, how many at least ``floor`` and at least 1.0x as fast, the median and the
    worst speedup, and where the worst is; no rows when no lane has an ok row beside an ok
    ``baseline`` row. (The bar of the Triton kernels' issue: no seed-suite row under 0.9x
    ``torch-nn``.)
    """
    parts = []
    for mode, table in (speedups(frame, baseline) if (frame["status"] == "ok").any() else {}).items():
        long = table.drop(columns=baseline).stack().dropna().rename("speedup").reset_index()  # label, lane, speedup
        parts.append(long.assign(where=long["label"] + f" {mode}"))
    columns = ["Lane", "rows", f"≥ {floor:g}×", "≥ 1×", "median ×", "worst ×", "worst row"]
    if not parts:
        return pd.DataFrame(columns=columns)
    rows = []
    long = pd.concat(parts, ignore_index=True)
    for lane, group in long.groupby("lane", sort=False):
        worst = group.loc[group["speedup"].idxmin()]
        rows.append([lane, len(group), int((group["speedup"] >= floor).sum()), int((group["speedup"] >= 1).sum()),
                     f"{group['speedup'].median():.2f}", f"{worst['speedup']:.2f}", worst["where"]])
    return pd.DataFrame(rows, columns=columns).sort_values("Lane", key=lambda c: c.map(_lane_order), kind="stable")


def figure(frame: pd.DataFrame, baseline: str = "torch-nn"):
    """The speedup figure (a matplotlib Figure): per mode a bar chart on a log scale, one group of
    bars per (configuration, machine), one bar per lane, one colour per lane in both panels, the
    legend outside the axes so that no bar hides behind it.

    Raises:
        UsageError: no row with status ok.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = speedups(frame, baseline)
    lanes = sorted({lane for t in tables.values() for lane in t.columns}, key=_lane_order)
    colours = dict(zip(lanes, plt.get_cmap("tab20").colors * 2))  # 20 distinct colours before any repeats
    rows = max((len(t) for t in tables.values()), default=1)
    width = max(8, rows * (0.15 * len(lanes) + 0.2) + 3)  # inches: about 0.15 per bar
    fig, axes = plt.subplots(2, 1, figsize=(width, 9), squeeze=False)
    for ax, mode in zip(axes[:, 0], MODE_COLUMNS):
        if mode in tables:
            table = tables[mode]
            table.plot.bar(ax=ax, logy=True, width=0.8, color=[colours[lane] for lane in table.columns])
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel(f"speedup over {baseline} (×)")
        ax.set_title(f"{MODE_COLUMNS[mode].split(' (')[0]}: {baseline} time / lane time, same run")
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return fig


def plot(frame: pd.DataFrame, path: str, baseline: str = "torch-nn") -> None:
    """Write :func:`figure` to ``path`` (the format follows the extension; the legend is kept
    inside the saved image).

    Raises:
        UsageError: no row with status ok (nothing is written).
    """
    import matplotlib.pyplot as plt

    fig = figure(frame, baseline)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
