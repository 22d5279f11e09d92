"""How far one lane's ratio to another moves from run to run, timed in turns or one lane after another.

Give it results files of repeated ``rnnbench run``s of the same cases and lanes, some with
``--turns 1`` and some with more; for every case it prints, per number of turns, the ratio
``BASELINE ms / LANE ms`` (> 1: LANE is faster) of each run and their spread (largest over
smallest). A measurement whose ratios agree from run to run has a spread near 1.

    python benchmarks/turns_spread.py --lane triton --baseline torch-nn runs/*.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ab import OneLineParser  # noqa: E402
from rnnbench.results import read_records  # noqa: E402


def ratios(paths: list[Path], lane: str, baseline: str) -> pd.DataFrame:
    """One row per (file, case): the case, the file's turns, and baseline ms / lane ms."""
    rows = []
    for path in paths:
        ok = [r for r in read_records(path, "result") if r.get("status") == "ok" and r["lane"] in (lane, baseline)]
        by_case: dict[str, dict] = {}
        for r in ok:
            by_case.setdefault(r["case_key"], {})[r["lane"]] = r
        for case, pair in by_case.items():
            if len(pair) == 2:
                rows.append({"case": case, "file": path.name, "turns": pair[lane].get("turns", 1),
                             "ratio": pair[baseline]["ms_per_batch"] / pair[lane]["ms_per_batch"]})
    return pd.DataFrame(rows)


def spread_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per case and turns: the runs' ratios (sorted), their count and spread (largest / smallest)."""
    grouped = frame.groupby(["case", "turns"])["ratio"]
    return pd.DataFrame({"runs": grouped.size(),
                         "ratios": grouped.apply(lambda r: " ".join(f"{v:.2f}" for v in sorted(r))),
                         "spread": grouped.max() / grouped.min()}).reset_index()


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("--lane", required=True)
    p.add_argument("--baseline", default="torch-nn")
    args = p.parse_args(argv)
    missing = [str(f) for f in args.files if not f.is_file()]
    if missing:
        p.error(f"no such results file: {', '.join(missing)}")
    frame = ratios(args.files, args.lane, args.baseline)
    if frame.empty:
        p.error(f"no case has ok rows of both {args.lane} and {args.baseline}")
    table = spread_table(frame)
    print(table.to_markdown(index=False, floatfmt=".2f"))
    print()
    print(table.groupby("turns")["spread"].describe()[["count", "50%", "max"]].to_markdown(floatfmt=".2f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
