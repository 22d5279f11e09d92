"""rnnbench.timing: measurements of workloads of known duration, the Measurement value, and the
synchronised phase clock of the language model (warm-up excluded, words/s from known sleeps)."""

from __future__ import annotations

import time

import pytest
import torch

from rnnbench import timing
from rnnbench.timing import (NOISY_SPREAD, PHASE_WARMUP_BATCHES, Measurement, PhaseClock, _quantile,
                             measure, run_plan, time_call)


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
                 "samples_ms": [1.0, 2.0, 3.1235], "turns": 1, "spread": 1.0, "noisy": True}


def _phase(clock: PhaseClock, sleeps: list[float], words: int) -> tuple[float | None, float | None]:
    for seconds in sleeps:
        time.sleep(seconds)  # the batch's work
        clock.batch_done(words)
    return clock.stop()


def test_phase_clock_leaves_the_warm_up_out_and_counts_words_per_second():
    """3 slow warm-up batches (0.1 s) then 5 batches of 0.02 s, 100 words each: 500 words in about
    0.1 s is about 5,000 words/s (1,250 if the warm-up were counted)."""
    clock = PhaseClock("cpu", n_batches=8)
    assert PHASE_WARMUP_BATCHES == 3 and clock.skip == 3
    wps, ms = _phase(clock, [0.1] * 3 + [0.02] * 5, words=100)
    assert clock.batches == 5 and clock.words == 500
    assert 19.0 <= ms <= 30.0
    assert 500 / 0.15 <= wps <= 500 / 0.099


def test_phase_clock_short_phases_time_their_last_batch():
    clock = PhaseClock("cpu", n_batches=2)  # fewer batches than the warm-up: skip all but the last
    wps, ms = _phase(clock, [0.1, 0.02], words=10)
    assert clock.skip == 1 and clock.batches == 1
    assert 19.0 <= ms <= 30.0 and 10 / 0.03 <= wps <= 10 / 0.0199
    single = PhaseClock("cpu", n_batches=1)
    assert single.skip == 0 and single.t0 is not None  # started at once
    wps, ms = _phase(single, [0.02], words=4)
    assert single.batches == 1 and 19.0 <= ms <= 30.0
    no_warmup = PhaseClock("cpu", n_batches=4, warmup=0)
    _phase(no_warmup, [0.0] * 4, words=1)
    assert no_warmup.batches == 4


@pytest.mark.parametrize("n_batches, done", [(0, 0), (5, 0), (5, 2)], ids=["empty", "none-run", "warm-up-only"])
def test_phase_clock_stop_before_any_timed_batch_gives_none(n_batches, done):
    clock = PhaseClock("cpu", n_batches=n_batches)
    for _ in range(done):
        clock.batch_done(7)
    assert clock.stop() == (None, None)


def test_phase_clock_synchronises_before_each_clock_read(monkeypatch):
    """The clock starts after the warm-up is *finished* and stops when the device is done: one
    synchronisation at the start of the timed batches, one in stop(), none per batch."""
    calls = []
    monkeypatch.setattr(timing, "synchronize", lambda device: calls.append(("sync", str(device))))
    real = time.perf_counter
    monkeypatch.setattr(timing.time, "perf_counter", lambda: (calls.append(("clock",)), real())[1])
    clock = PhaseClock("cpu", n_batches=6)
    for _ in range(6):
        clock.batch_done(1)
    assert calls == [("sync", "cpu"), ("clock",)]  # after the 3rd batch, not before or per batch
    clock.stop()
    assert calls[2:] == [("sync", "cpu"), ("clock",)]


def test_synchronize_is_a_no_op_on_the_cpu_and_accepts_names():
    timing.synchronize("cpu")
    timing.synchronize(torch.device("cpu"))


def test_a_compiling_first_call_does_not_cut_the_runs():
    """A first call that compiles (10x the budget) followed by fast calls gets the usual warm-up
    and runs: the plan follows the first warm-up, not the compilation."""
    calls = []

    def fn():
        calls.append(None)
        time.sleep(0.3 if len(calls) == 1 else 0.001)

    m = measure(fn, "cpu", budget_s=0.03, min_runs=5, warmup_runs=2)
    assert m.first_call_ms >= 290.0 and m.runs >= 5
    # and a call that stays slow is still cut to one warm-up and three runs
    calls.clear()
    m = measure(lambda: (calls.append(None), time.sleep(0.02)), "cpu", budget_s=0.03, min_runs=5, warmup_runs=2)
    assert m.runs == 3 and len(calls) == 1 + 1 + 3


@pytest.mark.parametrize("min_runs, max_runs, turns", [(5, 1000, 5), (3, 3, 5), (7, 40, 3), (1, 1, 1)])
def test_run_counts_shared_over_turns_add_up(min_runs, max_runs, turns):
    whole = timing.RunCounts(min_runs, max_runs)
    parts = [whole.share(turns, k) for k in range(turns)]
    assert sum(p.min_runs for p in parts) == min_runs and sum(p.max_runs for p in parts) == max_runs
    assert all(p.min_runs <= p.max_runs for p in parts)
    assert max(p.min_runs for p in parts) - min(p.min_runs for p in parts) <= 1  # spread evenly


def test_warm_up_plans_exactly_three_runs_for_a_long_call_and_sample_keeps_to_them():
    calls = []
    slow = lambda: (calls.append(None), time.sleep(0.03))  # noqa: E731
    first, runs = timing.warm_up(slow, "cpu", budget_s=0.05)
    assert (runs.min_runs, runs.max_runs) == (3, 3) and len(calls) == 2 and first >= 29.0
    assert len(timing.sample(slow, "cpu", budget_s=10.0, runs=runs)) == 3  # a budget left over adds none
    first, runs = timing.warm_up(lambda: None, "cpu", budget_s=0.05, first_call_ms=0.0)
    assert (runs.min_runs, runs.max_runs) == (5, 1000)
    assert len(timing.sample(lambda: None, "cpu", budget_s=10.0, runs=timing.RunCounts(2, 9))) == 9


def test_turns_of_a_lane_hold_a_few_calls_each():
    runs = timing.RunCounts(5, 1000, call_ms=10.0)
    assert runs.turns(20, budget_s=0.5) == 12  # 500 ms / (4 calls x 10 ms)
    assert runs.turns(5, budget_s=0.5) == 5
    assert runs.turns(20, budget_s=0.01) == 1  # never none
    assert timing.RunCounts(5, 1000, call_ms=0.0).turns(20, budget_s=0.5) == 20
    assert timing.RunCounts(3, 3, call_ms=0.1).turns(20, budget_s=0.5) == 1  # the long-call plan: in one go
