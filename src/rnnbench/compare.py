"""Compare two results files: which (case, lane) pairs got slower or faster, beyond the noise.

For every (case, lane) pair whose latest row is ``ok`` in both files, the figure is the ratio of
medians NEW / BASE (> 1 is slower) with a 95 % confidence interval from a bootstrap of the
recorded samples (``samples_ms``, every timed run). A pair is

- **slower** when the ratio exceeds ``1 + threshold`` and the difference is significant,
- **faster** when the ratio is below ``1 / (1 + threshold)`` and the difference is significant,
- **unchanged** otherwise.

Significant means: the confidence interval excludes 1 (both rows hold samples); for older rows
without samples, the p20–p80 ranges of the two rows do not overlap (a pessimistic check, as asv
falls back to non-overlapping confidence intervals); for rows without even those, the ratio alone
decides (as asv and pyperf do with a single value). A pair is **noisy** when either row says so
(p20–p80 spread over 10 % of the median) or its interval is wider than the threshold; noisy pairs
keep their verdict and are marked, never hidden. ``docs/methodology.md`` relates this to
``asv compare`` and ``pyperf compare_to``.

A file measured in several runs (``rnnbench run --runs N``, each a process of its own) gives each
pair the median of its runs' medians, and the interval a bootstrap over runs: each resample draws
the runs, then each drawn run's samples, with replacement (:func:`ratio_ci`), so that how far
a time moves between processes widens the interval as it should.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import UsageError
from .results import load_results, read_records
from .runs import latest, over_runs

THRESHOLD = 0.05  # default --threshold: 5 %
CONFIDENCE = 0.95  # coverage of the bootstrap interval
RESAMPLES = 2000  # bootstrap resamples per pair
SEED = 0  # one fixed seed per pair: the same files always give the same output
MIN_SAMPLES = 3  # fewer recorded runs than this on either side: treated as "no samples"
# Environment fields that make two files' times incomparable when they differ (``train_step``:
# how the timed training step reaches its backward, rnnbench.workload.TRAIN_STEP; None in records
# written before it was recorded).
ENV_FIELDS = ("gpu", "driver", "torch", "cudnn", "triton", "jax", "cpu", "train_step")
VERDICTS = ("slower", "faster", "unchanged")
# Statuses of a NEW row that, where BASE was ok, fail the comparison like a slowdown.
BROKEN = ("mismatch", "oom", "too_large", "error")


@dataclass(frozen=True)
class Verdict:
    """The comparison of one pair. ``ratio`` = NEW median / BASE median (> 1 is slower); ``ci``
    its confidence interval, None without samples; ``method`` how significance was decided
    (``bootstrap``, ``p20-p80``, ``ratio only``); ``noisy`` the reason the pair is noisy, or ""."""

    ratio: float
    ci: tuple[float, float] | None
    method: str
    verdict: str
    noisy: str = ""


@dataclass
class Comparison:
    """What :func:`compare_files` found: ``pairs`` (one row per pair measured ok in both files,
    slower first), ``not_compared`` (pairs absent from one file or not ok in one, with both
    statuses), and ``warnings`` (one line per environment field that differs)."""

    base: str
    new: str
    threshold: float
    pairs: pd.DataFrame
    not_compared: pd.DataFrame
    warnings: list[str] = field(default_factory=list)

    @property
    def slower(self) -> int:
        return int((self.pairs["verdict"] == "slower").sum())

    @property
    def broken(self) -> int:
        """Pairs measured ok in BASE that NEW no longer measures (a mismatch, an out-of-memory, a
        refusal as too large, an error): a regression at least as bad as a slowdown, as asv
        counts a benchmark that started failing."""
        frame = self.not_compared
        return int(((frame["base_status"] == "ok") & frame["new_status"].isin(BROKEN)).sum())


def parse_threshold(text: str) -> float:
    """``"5%"`` -> 0.05, ``"0.05"`` -> 0.05.

    Raises:
        UsageError: not a number, negative or not finite, or a bare number of 1 or more (``5``
            most likely means 5 %; write ``500%`` to mean a factor of 6).
    """
    percent = text.strip().endswith("%")
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise UsageError(f"--threshold takes a fraction (0.05) or a percentage (5%), got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"--threshold must be a finite number of at least 0, got {text!r}")
    if not percent and value >= 1:
        raise UsageError(f"--threshold {text} is a fraction: did you mean {text}%? (write 0.05 or 5%)")
    return value / 100 if percent else value


def ratio_ci(base_runs, new_runs, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
             seed: int = SEED) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of a ratio of medians of runs' medians, NEW / BASE.

    Each resample draws, for each side, as many runs as it has with replacement, and for each
    drawn run its samples with replacement (the two files are independent measurements); the
    side's figure is the median of those runs' medians. With one run a side that is the ratio of
    the two runs' resampled medians. The generator is seeded, so the same samples always give the
    same interval.

    Args:
        base_runs, new_runs: each a list of runs, a run a list of its timed samples in ms (at
            least one each).
    Returns:
        (low, high): the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
        resampled ratios.
    """
    rng = np.random.default_rng(seed)

    def figures(runs) -> np.ndarray:
        # every run's resampled medians [runs, resamples], then the runs each resample draws
        medians = np.stack([np.median(rng.choice(np.asarray(r, dtype=float), (resamples, len(r))), axis=1)
                            for r in runs])
        drawn = rng.integers(0, len(runs), (resamples, len(runs)))
        return np.median(medians[drawn, np.arange(resamples)[:, None]], axis=1)

    base, new = figures(base_runs), figures(new_runs)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = new / base
    low, high = np.nanquantile(ratios, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def judge(base: dict, new: dict, threshold: float = THRESHOLD) -> Verdict:
    """Compare one pair's BASE and NEW rows (status ok; see the module docstring for the rules).

    The ratio is of the rows' medians (``ms_per_batch``; over several runs, :func:`latest_rows`,
    the median of the runs'); the interval comes from ``samples_ms`` (every run's) when both rows
    hold at least :data:`MIN_SAMPLES` of them."""
    ratio = new["ms_per_batch"] / base["ms_per_batch"]
    ci = None
    if _has_samples(base) and _has_samples(new):
        ci = ratio_ci(_runs(base), _runs(new))
        method = "bootstrap over runs" if len(_runs(base)) > 1 or len(_runs(new)) > 1 else "bootstrap"
        significant = ci[0] > 1 or ci[1] < 1
    elif all(row.get(f) is not None for row in (base, new) for f in ("p20_ms", "p80_ms")):
        method = "p20-p80"
        significant = new["p20_ms"] > base["p80_ms"] or new["p80_ms"] < base["p20_ms"]
    else:
        method, significant = "ratio only", True
    if significant and ratio > 1 + threshold:
        verdict = "slower"
    elif significant and ratio < 1 / (1 + threshold):
        verdict = "faster"
    else:
        verdict = "unchanged"
    return Verdict(ratio, ci, method, verdict, _noise(base, new, ci, threshold))


def _runs(row: dict) -> list:
    """A row's samples, one list a run (:func:`latest_rows` keeps several runs' as ``samples_by_run``)."""
    return row.get("samples_by_run") or [row.get("samples_ms")]


def _has_samples(row: dict) -> bool:
    return all(isinstance(samples, list) and len(samples) >= MIN_SAMPLES for samples in _runs(row))


def _noise(base: dict, new: dict, ci: tuple[float, float] | None, threshold: float) -> str:
    """Why a pair is noisy ("" if it is not): the rows' own flags, or an interval wider than
    the threshold (the comparison cannot resolve a change of that size)."""
    reasons = [f"{side} row noisy" for side, row in (("BASE", base), ("NEW", new)) if row.get("noisy") is True]
    if ci is not None and ci[1] - ci[0] > threshold:
        reasons.append(f"CI wider than {threshold:.0%}")
    return "; ".join(reasons)


def latest_rows(path: str | os.PathLike) -> dict[tuple[str, str], dict]:
    """For each (case_key, lane) of a results file, any status, the last row written; where the
    file holds several runs of it (``rnnbench run --runs``), the last of each run folded into one
    row (:func:`rnnbench.runs.over_runs`: the medians of the runs', p20-p80 the widest, every run's
    samples as ``samples_by_run``; a failed run's row where one failed). A pair measured on
    several machines (:func:`rnnbench.runs.latest`, as ``rnnbench report`` keeps them apart) is the
    machine's written last, its runs alone.

    Raises:
        UsageError: see :func:`rnnbench.results.load_results`.
    """
    frame = latest(load_results(path))
    last_machine = frame.groupby(["case_key", "lane"], sort=False)["env_id"].transform("last")
    folded = over_runs(frame[frame["env_id"] == last_machine], ["case_key", "lane"])
    folded = folded.astype(object).where(pd.notna(folded), None)
    return {(r["case_key"], r["lane"]): r for r in folded.to_dict("records")}


def env_warnings(base_path, new_path, base_rows: list[dict], new_rows: list[dict]) -> list[str]:
    """One line per field of :data:`ENV_FIELDS` whose values differ between the environment
    records of the compared BASE rows and those of the compared NEW rows."""
    lines = []
    base_env, new_env = _env_values(base_path, base_rows), _env_values(new_path, new_rows)
    for name in ENV_FIELDS:
        if base_env[name] != new_env[name]:
            lines.append(f"warning: {name} differs (BASE {', '.join(base_env[name])}; NEW {', '.join(new_env[name])}): "
                         "the ratios measure that change too")
    return lines


def _env_values(path, rows: list[dict]) -> dict[str, list[str]]:
    """For each of :data:`ENV_FIELDS`, the sorted distinct values over the environments the rows
    name (``unknown`` for a row whose environment record is missing)."""
    envs = {r["env_id"]: r for r in read_records(path, "env") if "env_id" in r}
    used = [envs.get(r["env_id"], {}) for r in rows]
    return {name: sorted({str(e.get(name)) if e else "unknown" for e in used}) for name in ENV_FIELDS}


def compare_files(base_path, new_path, threshold: float = THRESHOLD) -> Comparison:
    """Compare every (case, lane) pair of two results files (see the module docstring).

    Raises:
        UsageError: a missing or unreadable file, a file that is not an rnnbench results file or
            holds a malformed row, or no pair measured ok in both files.
    """
    base, new = latest_rows(base_path), latest_rows(new_path)
    common = [k for k in base if k in new and base[k]["status"] == "ok" and new[k]["status"] == "ok"]
    if not common:
        raise UsageError(f"{base_path} and {new_path} have no (case, lane) pair measured ok in both; "
                         "nothing to compare")
    pairs = pd.DataFrame([_pair_row(k, base[k], new[k], threshold) for k in common])
    order = pairs["verdict"].map(VERDICTS.index)
    pairs = pairs.assign(_order=order, _ratio=pairs["ratio"] * order.map({0: -1, 1: 1, 2: 0}))
    pairs = pairs.sort_values(["_order", "_ratio"], kind="stable").drop(columns=["_order", "_ratio"])
    warnings = env_warnings(base_path, new_path, [base[k] for k in common], [new[k] for k in common])
    return Comparison(str(base_path), str(new_path), threshold, pairs.reset_index(drop=True),
                      _not_compared(base, new, set(common)), warnings)


def _pair_row(key: tuple[str, str], base: dict, new: dict, threshold: float) -> dict:
    v = judge(base, new, threshold)
    return {"case_key": key[0], "lane": key[1], "base_ms": base["ms_per_batch"], "new_ms": new["ms_per_batch"],
            "ratio": v.ratio, "ci_low": v.ci[0] if v.ci else None, "ci_high": v.ci[1] if v.ci else None,
            "method": v.method, "verdict": v.verdict, "noisy": v.noisy}


def _not_compared(base: dict, new: dict, compared: set) -> pd.DataFrame:
    """Pairs in either file that were not compared, with their status in each (``absent`` where
    the file has no row); pairs that are ``unavailable`` wherever they appear are left out (a
    lane that does not run on that device)."""
    rows = []
    for key in dict.fromkeys([*base, *new]):
        if key in compared:
            continue
        statuses = [side[key]["status"] if key in side else "absent" for side in (base, new)]
        if set(statuses) <= {"unavailable", "absent"}:
            continue
        rows.append({"case_key": key[0], "lane": key[1], "base_status": statuses[0], "new_status": statuses[1]})
    return pd.DataFrame(rows, columns=["case_key", "lane", "base_status", "new_status"])


def markdown(result: Comparison) -> str:
    """The comparison as Markdown: a summary line, the table of compared pairs (slower first),
    the pairs not compared, and a legend."""
    counts = result.pairs["verdict"].value_counts()
    noisy = int((result.pairs["noisy"] != "").sum())
    summary = (f"**{counts.get('slower', 0)} slower**, {counts.get('faster', 0)} faster, "
               f"{counts.get('unchanged', 0)} unchanged ({noisy} noisy) of {len(result.pairs)} pairs; "
               f"{len(result.not_compared)} not compared, **{result.broken} ok in BASE but failing in NEW**.")
    table = pd.DataFrame({
        "case": result.pairs["case_key"], "lane": result.pairs["lane"],
        "BASE (ms)": result.pairs["base_ms"].map(_ms), "NEW (ms)": result.pairs["new_ms"].map(_ms),
        "NEW/BASE": result.pairs["ratio"].map("{:.3f}".format),
        "95% CI": [_ci(lo, hi) for lo, hi in zip(result.pairs["ci_low"], result.pairs["ci_high"])],
        "verdict": result.pairs["verdict"], "noisy": result.pairs["noisy"], "significance": result.pairs["method"],
    })
    parts = [f"## rnnbench compare\n\nBASE: {result.base}  \nNEW: {result.new}  \n"
             f"threshold: {result.threshold:.1%}\n\n{summary}\n",
             table.to_markdown(index=False, disable_numparse=True)]
    if not result.not_compared.empty:
        others = result.not_compared.rename(columns={"case_key": "case", "base_status": "BASE", "new_status": "NEW"})
        parts.append("\n### Not compared (absent from a file, or not ok in one)\n\n"
                     + others.to_markdown(index=False, disable_numparse=True))
    parts.append(_legend(result.threshold))
    return "\n".join(parts) + "\n"


def _ms(value: float) -> str:
    return f"{value:.4g}"


def _ci(low, high) -> str:
    return "unknown (no samples)" if pd.isna(low) else f"{low:.3f}–{high:.3f}"


def _legend(threshold: float) -> str:
    return (f"\nNEW/BASE = ratio of median times (> 1 is slower). 95% CI: percentile bootstrap of that ratio "
            f"from the recorded runs ({RESAMPLES} resamples, seed {SEED}). slower / faster: the ratio is beyond "
            f"{1 + threshold:.3f} / {1 / (1 + threshold):.3f} and the difference is significant (significance "
            "`bootstrap`: the CI excludes 1; `bootstrap over runs`: the same, files of several runs, whose "
            "resamples draw runs, then samples; `p20-p80`: rows without samples, their p20–p80 ranges do not "
            "overlap; `ratio only`: neither is recorded). noisy: a row flagged noisy, or a CI wider than the "
            "threshold (a change that small cannot be resolved); the verdict stands, read it with care.")


def csv(result: Comparison) -> str:
    """The comparison as CSV: one line per compared pair, then one per pair not compared
    (verdict ``not compared``, with each file's status; the figures left empty)."""
    pairs = result.pairs.assign(base_status="ok", new_status="ok")
    others = result.not_compared.assign(verdict="not compared")
    return pd.concat([pairs, others], ignore_index=True).to_csv(index=False)
