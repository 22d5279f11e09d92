"""``rnnbench.runs.over_runs``: a pair's runs as one row, the rule ``report`` and ``compare`` share."""
import pandas as pd

from rnnbench.runs import over_runs


def _row(lane, run, ms, status="ok", **extra):
    return {"case_key": "c", "lane": lane, "run": run, "status": status, "ms_per_batch": ms,
            "us_per_example": ms * 10, "p20_ms": ms - 0.1, "p80_ms": ms + 0.2, "noisy": run == 2,
            "samples_ms": [ms] * 3, "message": f"run {run}", **extra}


def test_a_pair_of_several_runs_is_their_medians_its_widest_spread_and_each_runs_samples():
    frame = pd.DataFrame([_row("b", 1, 1.0), _row("a", 1, 10.0, speedup=1.0), _row("a", 2, 11.0, speedup=3.0),
                          _row("a", 3, 30.0, speedup=1.5), _row("b", 2, 2.0)])
    out = over_runs(frame, ["case_key", "lane"], ranges=("speedup",))
    assert list(out["lane"]) == ["b", "a"]  # the order first measured
    a = out.iloc[1]
    assert a["processes"] == 3 and a["ms_per_batch"] == 11.0 and a["us_per_example"] == 110.0  # medians, not means
    assert (a["speedup"], a["speedup_low"], a["speedup_high"]) == (1.5, 1.0, 3.0)
    assert (a["p20_ms"], a["p80_ms"]) == (9.9, 30.2) and a["noisy"]
    assert a["samples_by_run"] == [[10.0] * 3, [11.0] * 3, [30.0] * 3] and a["message"] == "run 3"


def test_a_pair_with_a_failed_run_is_that_run_and_one_run_is_itself():
    frame = pd.DataFrame([_row("a", 1, 10.0), _row("a", 2, float("nan"), "oom"), _row("a", 3, float("nan"), "error"),
                          _row("b", 1, 4.0)])
    a, b = over_runs(frame, ["case_key", "lane"]).to_dict("records")
    assert a["status"] == "oom" and a["message"] == "run 2" and a["processes"] == 3
    assert b["processes"] == 1 and b["ms_per_batch"] == 4.0 and (b["p20_ms"], b["p80_ms"]) == (3.9, 4.2)
    assert b["samples_by_run"] == [[4.0] * 3] and not b["noisy"]
