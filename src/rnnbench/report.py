"""Tables and plots from a results file, shaped like the seed tables.

One table per configuration (batch × seq × input × hidden × layers, dtype, loss, machine): rows are
(cell, lane), columns are Train (µs) and Forward only (µs) per example, and the speedup of each
lane over a baseline lane measured in the same run (baseline time / lane time; > 1 is faster).
Published seed figures for the same configuration are appended as labelled rows.
"""

from __future__ import annotations

import pandas as pd

from .errors import UsageError
from .lanes import LANES
from .published import published_for

GROUP = ["gpu", "device", "dtype", "loss", "batch_size", "seq_len", "input_size", "hidden_size", "num_layers"]
MODE_COLUMNS = {"train": "Train (µs)", "forward": "Forward only (µs)"}


def latest(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, lane, machine): the last one written (a re-run supersedes)."""
    return frame.drop_duplicates(subset=["case_key", "lane", "env_id"], keep="last")


def _title(config: dict) -> str:
    layers = "layer" if config["num_layers"] == 1 else "layers"
    machine = config["gpu"] if config["device"] == "cuda" else "CPU"
    return (f"batch {config['batch_size']} × seq {config['seq_len']} × input {config['input_size']} × "
            f"hidden {config['hidden_size']} × {config['num_layers']} {layers} · {config['dtype']} · "
            f"{config['loss']} loss · {machine}")


def _cell_text(row: pd.Series | None) -> str:
    if row is None:
        return ""
    if row["status"] != "ok":
        return row["status"]
    return f"{row['us_per_example']:.1f}" + ("*" if row.get("noisy") else "")


def _speedup(row, base) -> str:
    if row is None or base is None or row["status"] != "ok" or base["status"] != "ok":
        return ""
    return f"{base['us_per_example'] / row['us_per_example']:.2f}×"


def _lane_order(lane: str) -> tuple:
    names = list(LANES)
    return (names.index(lane) if lane in names else len(names), lane)


def group_table(group: pd.DataFrame, baseline: str, published: bool = True) -> pd.DataFrame:
    """The seed-shaped table of one configuration (see module docstring)."""
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
                line[f"{mode} × {baseline}"] = _speedup(by.get((lane, mode)), by.get((baseline, mode)))
            rows.append(line)
    if published:
        for pub in published_for(group.iloc[0].to_dict()):
            rows.append({"cell": pub["cell"], "lane": pub["lane"], MODE_COLUMNS["train"]: f"{pub['train']:.1f}",
                         MODE_COLUMNS["forward"]: f"{pub['forward']:.1f}"})
    return pd.DataFrame(rows).fillna("")


def _sources(group: pd.DataFrame) -> str:
    """The footnote naming where a table's [published] rows come from."""
    sources = sorted({p["source"] for p in published_for(group.iloc[0].to_dict())})
    return f"\n[published]: {'; '.join(sources)}. Another GPU and year; not our measurements.\n" if sources else ""


def tables(frame: pd.DataFrame, baseline: str = "torch-nn", published: bool = True) -> list[tuple[str, pd.DataFrame, str]]:
    """(title, table, footnote) for every configuration in the results, in the order first measured."""
    frame = latest(frame)
    out = []
    for _, group in frame.groupby(GROUP, sort=False, dropna=False):
        if (group["status"] == "unavailable").all():
            continue
        note = _sources(group) if published else ""
        out.append((_title(group.iloc[0].to_dict()), group_table(group, baseline, published), note))
    return out


def markdown(frame: pd.DataFrame, baseline: str = "torch-nn", published: bool = True) -> str:
    """All tables as Markdown, with the legend the numbers need."""
    parts = [f"### {title}\n\n{table.to_markdown(index=False, disable_numparse=True)}\n{note}"
             for title, table, note in tables(frame, baseline, published)]
    legend = ("µs per example = median time per batch / batch_size; train = forward + loss + backward. "
              f"`× {baseline}` = {baseline} time / lane time in the same run (> 1 is faster). "
              "`*` = noisy (p20–p80 spread over 10 % of the median). `[published]` rows are the seeds' "
              "own figures from another GPU and year, quoted for context, not our measurements.")
    return "\n".join(parts + [legend])


def plot(frame: pd.DataFrame, path: str, baseline: str = "torch-nn") -> None:
    """Bar chart of each lane's speedup over ``baseline`` per case (log scale), train and forward."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = latest(frame)
    ok = ok[ok["status"] == "ok"].copy()
    if ok.empty:
        raise UsageError("nothing to plot: the results hold no row with status ok")
    ok["label"] = [f"{r.cell} B{r.batch_size} T{r.seq_len} H{r.hidden_size} L{r.num_layers} {r.dtype}"
                   for r in ok.itertuples()]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.45 * ok["label"].nunique() + 3), 9), squeeze=False)
    for ax, mode in zip(axes[:, 0], MODE_COLUMNS):
        part = ok[ok["mode"] == mode]
        table = part.pivot_table(index="label", columns="lane", values="us_per_example", sort=False)
        if baseline in table:
            speedup = table.rdiv(table[baseline], axis=0)[sorted(table.columns, key=_lane_order)]
            speedup.plot.bar(ax=ax, logy=True, width=0.8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel(f"speedup over {baseline} (×)")
        ax.set_title(f"{MODE_COLUMNS[mode].split(' (')[0]}: {baseline} time / lane time, same run")
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelsize=7)
        if ax.get_legend():
            ax.legend(ncol=4, fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
