"""Issue 8's speed goals for our kernels, checked on rnnbench result files: met, missed, or where
not yet measured.

    python benchmarks/kernel_goals.py RESULTS.jsonl[.gz] ... [--lm LM.jsonl ...]
    python benchmarks/kernel_goals.py benchmarks/results/h200/seeds-f7563b2/seeds.jsonl.gz \\
        benchmarks/results/h200/standing-9ff6e69/*.jsonl.gz --lm benchmarks/results/h200/standing-0249ac9/lm/*.jsonl

Issue 8 ("Speed") sets its bars for ``rnnbench.nn``'s kernels against ``torch-nn`` measured side by
side in one run. Each bar is a :class:`Goal` in :data:`GOALS` (data): the cases (a suite's, from
the registry: ``rnnbench.suites``), their dtypes and mode, our lane and its baseline, and the ratio
to reach, the baseline's time over ours (> 1: ours is faster), paired as ``rnnbench report`` pairs
them: the latest rows of one machine's run, over ``--runs N`` the median of the runs' ratios. A case
where our lane failed (``mismatch``, ``error``, ...) misses its goal; one where the baseline failed
has no ratio and counts as not measured. The language model's goal reads ``rnnbench lm`` files
(``--lm``): the latest final epoch of each lane.

For each machine (GPU) in the files: one line per goal, ``met`` (every case measured and met),
``missed`` (a case measured below the bar), ``partly measured`` (every measured case met, some
have no row) or ``not measured``; how many cases it has and how many were measured and met; the
worst ratio and where. Then every case that missed. Exit 0 when no goal is missed, 1 when one is,
2 on bad input (one line).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ab import OneLineParser  # noqa: E402
from rnnbench.errors import UsageError  # noqa: E402
from rnnbench.report import combined  # noqa: E402
from rnnbench.results import load_results, read_records  # noqa: E402
from rnnbench.runs import latest  # noqa: E402
from rnnbench.suites import suite_cases  # noqa: E402

ISSUE_SUITES = ("glample-2016", "theano-cudnn-2016")  # every glample case, theano's at depth 1
SEED_SUITES = ("glample-2016", "theano-cudnn-2016", "fastrnns", "flashrnn-2024")


@dataclass(frozen=True)
class Goal:
    """One of issue 8's bars.

    ``at_least``: the baseline's time over our lane's that each case must reach. ``dtypes``: the
    cases in each of these dtypes (empty: each suite's own). ``mode``: ``forward``, ``train`` or
    empty for both. ``depth``: only cases of that many layers. ``baseline_dtype``: the baseline
    measured in another dtype in the same run (FlashRNN's bf16 against cuDNN's fp16). ``floor_within``:
    a case also meets the bar where the bar would take ours past the arithmetic floor (``ratio <
    at_least * peak_fraction``: the baseline's time over ``at_least`` is under the floor's) and ours
    is within this factor of the floor (``peak_fraction >= 1 / floor_within``)."""

    name: str
    suites: tuple[str, ...]
    dtypes: tuple[str, ...]
    mode: str
    at_least: float
    lane: str = "triton"
    baseline: str = "torch-nn"
    depth: int | None = None
    baseline_dtype: str | None = None
    floor_within: float | None = None


# The issue's "Speed" bars, read as the project has reported them: "at least as fast as
# torch-nn-graph on the same cases" is our graphed lane against cuDNN's graphed one; "train ... on
# the same cases" covers TF32, bf16 and fp32, the floor clause being written for the forward alone.
GOALS = [
    Goal("forward >= 2x torch-nn (TF32, bf16)", ISSUE_SUITES, ("tf32", "bf16"), "forward", 2.0, depth=1),
    Goal("forward >= 2x torch-nn, or within 1.25x of the floor where 2x passes it (fp32)", ISSUE_SUITES, ("fp32",),
         "forward", 2.0, depth=1, floor_within=1.25),
    Goal("graphed forward >= torch-nn-graph", ISSUE_SUITES, ("tf32", "bf16", "fp32"), "forward", 1.0,
         lane="triton-graph", baseline="torch-nn-graph", depth=1),
    Goal("train >= 1.5x torch-nn", ISSUE_SUITES, ("tf32", "bf16", "fp32"), "train", 1.5, depth=1),
    Goal("FlashRNN bf16 forward within 1.5x of torch-nn fp16", ("flashrnn-2024",), ("bf16",), "forward", 1 / 1.5,
         baseline_dtype="fp16"),
    Goal("FlashRNN bf16 train within 2x of torch-nn fp16", ("flashrnn-2024",), ("bf16",), "train", 0.5,
         baseline_dtype="fp16"),
    Goal("FlashRNN fp16 forward within 1.5x of torch-nn fp16", ("flashrnn-2024",), ("fp16",), "forward", 1 / 1.5),
    Goal("FlashRNN fp16 train within 2x of torch-nn fp16", ("flashrnn-2024",), ("fp16",), "train", 0.5),
    Goal("every seed-suite case >= 0.9x torch-nn", SEED_SUITES, (), "", 0.9),
]
LM_GOAL = "kawakami-2017 lm, bf16 autocast: triton trains faster than torch-nn"


def goal_cases(goal: Goal) -> dict[str, str]:
    """Each of the goal's cases as ``{our row's case_key: the baseline row's case_key}``."""
    keys = {}
    for suite in goal.suites:
        for dtype in goal.dtypes or (None,):
            for case in suite_cases(suite, "cuda", **({} if dtype is None else {"dtype": dtype})):
                if (goal.mode and case.mode != goal.mode) or (goal.depth and case.num_layers != goal.depth):
                    continue
                base = dataclasses.replace(case, dtype=goal.baseline_dtype) if goal.baseline_dtype else case
                keys[case.key] = base.key
    return keys


def case_ratios(rows: pd.DataFrame, goal: Goal) -> pd.DataFrame:
    """One machine's rows -> one row per measured case of ``goal``: ``ratio`` (the baseline's time
    over ours, :func:`rnnbench.report.combined`'s ``speedup``: paired within a run, over runs the
    median; NaN where ours failed), ``failed`` (our status where it was not ok), ``peak_fraction``
    (ours), ``runs``. A case measured under several environment records (``rnnbench run``s) takes
    the last one's; one whose baseline has no ok row is left out (not measured)."""
    cases = goal_cases(goal)
    ours_of = {base: ours for ours, base in cases.items()}
    ours = rows[(rows["lane"] == goal.lane) & rows["case_key"].isin(cases)]
    base = rows[(rows["lane"] == goal.baseline) & rows["case_key"].isin(ours_of)]
    # (the baseline's row stands under our case's key: FlashRNN's cuDNN fp16 beside our bf16)
    paired = combined(pd.concat([ours, base.assign(case_key=base["case_key"].map(ours_of))]), goal.baseline)
    paired = paired[paired["lane"] == goal.lane].drop_duplicates("case_key", keep="last")
    paired = paired[(paired["status"] != "ok") | paired["speedup"].notna()]
    return pd.DataFrame({"case": paired["case_key"], "ratio": paired["speedup"].where(paired["status"] == "ok"),
                         "failed": [None if status == "ok" else status for status in paired["status"]],
                         "runs": paired["processes"],
                         "peak_fraction": paired.get("peak_fraction", float("nan"))}).reset_index(drop=True)


def meets(goal: Goal, ratio: float, peak_fraction: float) -> bool:
    """Whether one case's ratio (and our peak fraction, NaN where the row has none) meets ``goal``."""
    if ratio != ratio:  # (our lane failed)
        return False
    if ratio >= goal.at_least:
        return True
    return (goal.floor_within is not None and peak_fraction == peak_fraction
            and ratio < goal.at_least * peak_fraction and peak_fraction >= 1 / goal.floor_within)


def verdict(goal: Goal, measured: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """The goal's line for one machine and its cases that missed."""
    total = len(goal_cases(goal))
    met = pd.Series([meets(goal, r.ratio, r.peak_fraction) for r in measured.itertuples(index=False)],
                    index=measured.index, dtype=bool)
    missed = measured[~met]
    if measured.empty:
        status = "not measured"
    elif len(missed):
        status = "missed"
    else:
        status = "met" if len(measured) == total else "partly measured"
    worst = measured.sort_values("ratio", na_position="first").iloc[0] if len(measured) else None
    line = {"goal": goal.name, "status": status, "cases": total, "measured": len(measured),
            "met": len(measured) - len(missed),
            "worst ×": "" if worst is None else (worst["failed"] if worst["failed"] else f"{worst['ratio']:.2f}"),
            "worst case": "" if worst is None else worst["case"]}
    return line, missed


def lm_line(paths: list[Path], gpu: str) -> dict | None:
    """The language model's goal on ``gpu`` from ``rnnbench lm`` files, or None where they hold no
    final kawakami-2017 bf16 epoch of that machine."""
    wps = {}
    for path in paths:
        envs = {r["env_id"]: r.get("gpu") or "cpu" for r in read_records(path, "env") if "env_id" in r}
        for r in read_records(path, "lm"):
            if (r.get("preset") == "kawakami-2017" and r.get("amp") == "bf16" and r.get("final")
                    and envs.get(r.get("env_id")) == gpu):
                wps[r["lane"]] = r["train_wps"]  # (the latest written stands)
    if not wps:
        return None
    ratio = wps["triton"] / wps["torch-nn"] if {"triton", "torch-nn"} <= wps.keys() else None
    status = "not measured" if ratio is None else ("met" if ratio > 1 else "missed")
    return {"goal": LM_GOAL, "status": status, "cases": 1, "measured": int(ratio is not None),
            "met": int(status == "met"), "worst ×": "" if ratio is None else f"{ratio:.2f}",
            "worst case": "train words/s, triton over torch-nn"}


def machine_report(rows: pd.DataFrame, gpu: str, lm_paths: list[Path]) -> tuple[pd.DataFrame, list[str], bool]:
    """One machine's goal lines, the cases that missed (a line each), whether any goal missed."""
    lines, misses = [], []
    for goal in GOALS:
        line, missed = verdict(goal, case_ratios(rows, goal))
        lines.append(line)
        for r in missed.itertuples(index=False):
            misses.append(f"- {goal.name}: {r.case} " + (f"ours {r.failed}" if r.failed else f"{r.ratio:.2f}x"
                                                         + (f" (median of {r.runs} runs)" if r.runs > 1 else "")))
    lm = lm_line(lm_paths, gpu) if lm_paths else None
    if lm is not None:
        lines.append(lm)
        if lm["status"] == "missed":
            misses.append(f"- {LM_GOAL}: {lm['worst ×']}x")
    table = pd.DataFrame(lines)
    return table, misses, bool((table["status"] == "missed").any())


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("files", type=Path, nargs="+", help="rnnbench run results files")
    p.add_argument("--lm", type=Path, nargs="+", default=[], help="rnnbench lm results files")
    args = p.parse_args(argv)
    missing = [str(f) for f in [*args.files, *args.lm] if not f.is_file()]
    if missing:
        p.error(f"no such results file: {', '.join(missing)}")
    try:
        frame = pd.concat([load_results(f) for f in args.files], ignore_index=True)
        rows = latest(frame)
        any_missed = False
        for gpu, machine in rows.groupby("gpu", sort=False):
            table, misses, missed = machine_report(machine, gpu, args.lm)
            any_missed |= missed
            print(f"### Issue 8's goals on {gpu}\n")
            print(f"Rows from commit {', '.join(dict.fromkeys(machine['git_commit'].fillna('?')))}.\n")
            print(table.to_markdown(index=False, disable_numparse=True))
            if misses:
                print("\nCases that missed:\n\n" + "\n".join(misses))
            print()
    except UsageError as err:
        p.error(str(err))
    return 1 if any_missed else 0


if __name__ == "__main__":
    sys.exit(main())
