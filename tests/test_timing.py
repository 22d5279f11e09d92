"""rnnbench.timing: measurements of workloads of known duration, and the Measurement value."""

from __future__ import annotations

import time

import pytest

from rnnbench.timing import NOISY_SPREAD, Measurement, _quantile, measure, run_plan, time_call


def test_measure_sleep_of_known_duration():
    m = measure(lambda: time.sleep(0.02), "cpu", budget_s=0.2)
    assert 19.0 <= m.median_ms <= 30.0
    assert 19.0 <= m.p20_ms <= m.median_ms <= m.p80_ms
    assert m.runs >= 5  # min_runs
    assert 5 <= m.runs <= 12  # about budget / duration, not max_runs
    assert 19.0 <= m.first_call_ms <= 60.0  # the first call is timed and reported too


def test_first_call_is_timed_alone_and_kept_out_of_the_median():
    calls = []

    def fn():
        calls.append(None)
        time.sleep(0.08 if len(calls) == 1 else 0.002)

    m = measure(fn, "cpu", budget_s=1.0, min_runs=5, warmup_runs=2)
    assert m.first_call_ms >= 79.0
    assert m.median_ms < 20.0 and m.p80_ms < 40.0
    assert len(calls) == 1 + 2 + m.runs  # first, warm-up, timed
    assert len(m.samples_ms) == m.runs and list(m.samples_ms) == sorted(m.samples_ms)


def test_a_first_call_over_the_budget_caps_the_runs():
    """--budget is a limit: a call that takes longer than the whole budget gets one warm-up and
    three timed runs, not two and five (a seq-20000 cell loop took a minute at a 0.5 s budget)."""
    calls = []
    m = measure(lambda: (calls.append(None), time.sleep(0.03)), "cpu", budget_s=0.05, min_runs=5, warmup_runs=2)
    assert m.runs == 3 and len(calls) == 1 + 1 + 3


def test_run_plan():
    assert run_plan(first_call_ms=1.0, budget_s=0.5) == (2, 5)
    assert run_plan(first_call_ms=71.4, budget_s=0.5) == (2, 5)  # 7 calls fit in 0.5 s
    assert run_plan(first_call_ms=72.0, budget_s=0.5) == (1, 3)
    assert run_plan(first_call_ms=10_000.0, budget_s=0.5) == (1, 3)
    assert run_plan(first_call_ms=1000.0, budget_s=0.5, warmup_runs=0, min_runs=2) == (0, 2)


def test_first_call_ms_given_skips_the_first_call():
    calls = []
    m = measure(lambda: calls.append(None), "cpu", budget_s=0.0, min_runs=3, warmup_runs=1, first_call_ms=12.5)
    assert m.first_call_ms == 12.5
    assert m.runs == 3 and len(calls) == 1 + 3


def test_run_counts_are_bounded():
    assert measure(lambda: None, "cpu", budget_s=10.0, min_runs=5, max_runs=40, warmup_runs=0).runs == 40
    assert measure(lambda: None, "cpu", budget_s=0.0, min_runs=7, warmup_runs=0, first_call_ms=0.0).runs == 7
    # min_runs wins over a spent budget (when the first call did not call for the long-call plan)
    assert measure(lambda: time.sleep(0.005), "cpu", budget_s=0.001, min_runs=4, warmup_runs=0,
                   first_call_ms=0.0).runs == 4


def test_time_call_returns_result_and_duration():
    result, ms = time_call(lambda: (time.sleep(0.01), "value")[1], "cpu")
    assert result == "value"
    assert 9.5 <= ms <= 100.0
    assert time_call(lambda: None, "cpu")[0] is None


def test_quantile():
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert _quantile(values, 0.0) == 1.0 and _quantile(values, 1.0) == 5.0
    assert _quantile(values, 0.5) == 3.0
    assert _quantile(values, 0.2) == pytest.approx(1.8)
    assert _quantile(values, 0.8) == pytest.approx(4.2)
    assert _quantile([7.0], 0.8) == 7.0


@pytest.mark.parametrize("p20, p80, noisy", [(9.6, 10.4, False), (9.5, 10.5, False), (9.0, 11.01, True),
                                             (5.0, 20.0, True)])
def test_noisy_marks_spread_over_ten_percent(p20, p80, noisy):
    m = Measurement(median_ms=10.0, p20_ms=p20, p80_ms=p80, runs=10, first_call_ms=50.0)
    assert m.spread == pytest.approx((p80 - p20) / 10.0)
    assert m.noisy is noisy
    assert NOISY_SPREAD == 0.10


def test_spread_of_zero_median_and_to_dict():
    assert Measurement(0.0, 0.0, 0.0, 5, 0.0).spread == 0.0
    d = Measurement(2.0, 1.0, 3.0, 3, 4.0, (1.0, 2.0, 3.123456789)).to_dict()
    assert d == {"median_ms": 2.0, "p20_ms": 1.0, "p80_ms": 3.0, "runs": 3, "first_call_ms": 4.0,
                 "samples_ms": [1.0, 2.0, 3.1235], "spread": 1.0, "noisy": True}
