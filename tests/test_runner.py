"""rnnbench.runner: verify, time and record every (case, lane); survive broken lanes; resume."""

from __future__ import annotations

import json
import math

import pytest
import torch

from rnnbench import runner, timing
from rnnbench.cases import Case
from rnnbench.flops import case_flops
from rnnbench.lanes import LANES
from rnnbench.lanes.torch_nn import build_torch_nn
from rnnbench.peak import Peak
from rnnbench.results import ResultsFile, read_records
from rnnbench.timing import Measurement, run_plan

TINY = [Case(cell="gru", batch_size=2, seq_len=3, input_size=4, hidden_size=5, mode=m) for m in ("train", "forward")]
CPU_LANES = [LANES["torch-nn"], LANES["torch-fused-loop"], LANES["torch-cell-loop"]]


def _pairs(rows):
    return [(r["case_key"], r["lane"]) for r in rows]


# --- a small real run ---------------------------------------------------------------------------

def test_small_run_rows(small_run):
    rows = small_run.rows
    assert len(small_run.cases) == 2 and {c.mode for c in small_run.cases} == {"train", "forward"}
    assert len(rows) == 2 * 3
    assert _pairs(rows) == [(c.key, lane.name) for c in small_run.cases for lane in small_run.lanes]
    assert small_run.started == _pairs(rows)  # on_start is called before each pair
    for row in rows:
        assert row["record"] == "result" and row["case_key"] == Case(**{k: row[k] for k in Case().to_dict()}).key
        if row["lane"] == "torch-nn-graph":
            assert row["status"] == "unavailable" and row["message"] == "runs on cuda only"
            assert "us_per_example" not in row
            continue
        assert row["status"] == "ok", row
        assert row["message"] == "" and row["max_rel_error"] < 1e-4
        assert row["us_per_example"] > 0
        assert row["us_per_example"] == pytest.approx(row["ms_per_batch"] * 1e3 / row["batch_size"])
        assert row["sequences_per_s"] == pytest.approx(row["batch_size"] / (row["ms_per_batch"] / 1e3))
        assert row["timesteps_per_s"] == pytest.approx(row["sequences_per_s"] * row["seq_len"])
        assert row["runs"] >= run_plan(row["first_call_ms"], 0.02)[1] and row["first_call_ms"] > 0
        assert row["p20_ms"] <= row["p80_ms"] and len(row["samples_ms"]) == row["runs"]
        assert row["peak_mem_bytes"] is None  # CPU: no device allocator to ask
        case = Case(**{k: row[k] for k in Case().to_dict()})
        assert row["tflops"] == pytest.approx(case_flops(case) / (row["ms_per_batch"] / 1e3) / 1e12)
        assert 0 < row["peak_fraction"] == pytest.approx(row["tflops"] / row["peak_tflops"])
        assert all(math.isfinite(row[f]) for f in ("tflops", "peak_tflops", "peak_fraction"))
    # one peak per run and (device, dtype), in every ok row; none in the others
    assert len({r["peak_tflops"] for r in rows if r["status"] == "ok"}) == 1
    assert all("tflops" not in r and "peak_tflops" not in r for r in rows if r["status"] != "ok")


def test_peak_measured_once_per_device_and_dtype(monkeypatch, temp_lane, tmp_path):
    """Only for a (device, dtype) with an ok row, once however many rows; a peak that cannot be
    measured costs the rows their fraction, not their times, and is said once."""
    calls, notes = [], []
    monkeypatch.setattr(runner, "matmul_peak", lambda device, dtype: calls.append((device, dtype)) or Peak(2.0, 64))
    runner.run(TINY, CPU_LANES[:2], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert calls == [("cpu", "fp32")]

    def broken_build(*args):
        raise ValueError("no")

    calls.clear()
    rows = runner.run(TINY, [temp_lane("test-broken", broken_build)], ResultsFile(tmp_path / "s.jsonl"), budget_s=0.01)
    assert calls == [] and {r["status"] for r in rows} == {"error"}

    def no_memory(device, dtype):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory")

    monkeypatch.setattr(runner, "matmul_peak", no_memory)
    rows = runner.run(TINY, CPU_LANES[:2], ResultsFile(tmp_path / "t.jsonl"), budget_s=0.01, on_note=notes.append)
    assert {r["status"] for r in rows} == {"ok"} and all(r["tflops"] > 0 and "peak_fraction" not in r for r in rows)
    # Said once. (A loaded machine may add a note that a pair is slow for the budget: not this one's.)
    peak_notes = [n for n in notes if "matmul peak" in n]
    assert len(peak_notes) == 1 and "fp32 matmul peak on cpu could not be measured" in peak_notes[0]


def test_small_run_file_matches_rows_and_has_env(small_run):
    assert list(read_records(small_run.path, "result")) == json.loads(json.dumps(small_run.rows))
    envs = list(read_records(small_run.path, "env"))
    assert len(envs) == 1
    assert {"torch", "python", "env_id", "cpu"} <= set(envs[0])
    assert {r["env_id"] for r in small_run.rows} == {envs[0]["env_id"]}
    first = small_run.path.read_text().splitlines()[0]
    assert json.loads(first)["record"] == "env"  # the environment comes before the rows it explains


def test_speed_fields():
    case = Case(batch_size=20, seq_len=30)
    m = Measurement(median_ms=2.0, p20_ms=1.9, p80_ms=2.5, runs=9, first_call_ms=40.0)
    f = runner.speed_fields(case, m)
    assert f["ms_per_batch"] == 2.0 and f["us_per_example"] == pytest.approx(100.0)
    assert f["sequences_per_s"] == pytest.approx(10_000.0) and f["timesteps_per_s"] == pytest.approx(300_000.0)
    assert f["noisy"] is True and f["spread"] == pytest.approx(0.3) and "median_ms" not in f
    assert f["tflops"] == pytest.approx(case_flops(case) / 2e-3 / 1e12)
    # a variable-length batch: the matmuls of the useful steps only, like useful_timesteps_per_s
    assert runner.speed_fields(case, m, 100)["tflops"] == pytest.approx(case_flops(case, 100) / 2e-3 / 1e12)


# --- broken lanes: the row says what broke and the run goes on ------------------------------------

def test_error_in_a_lane_is_recorded_and_the_run_continues(temp_lane, tmp_path):
    def broken(cell, i, h, layers):
        raise ValueError("cannot build this\nsecond line of detail")

    class Explodes(torch.nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.inner = build_torch_nn(*args)

        def forward(self, x, hx):
            raise RuntimeError("kernel launch failed")

    lanes = [temp_lane("test-broken-build", broken), temp_lane("test-broken-step", Explodes,
             load=lambda m, w: m.inner.load_state_dict(w), canonical_name=lambda n: n.removeprefix("inner.")),
             LANES["torch-nn"]]
    rows = runner.run(TINY, lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["error", "error", "ok"] * 2
    assert rows[0]["message"] == "ValueError: cannot build this"  # type and first line only
    assert rows[1]["message"] == "RuntimeError: kernel launch failed"
    assert all("us_per_example" not in r for r in rows if r["status"] == "error")
    assert len(list(read_records(tmp_path / "r.jsonl", "result"))) == 6


@pytest.mark.parametrize("wrong_from", [2, 3])
def test_a_lane_wrong_once_warm_is_a_mismatch(temp_lane, tmp_path, wrong_from):
    """What is timed must be what was verified: a lane whose first call is right and whose later
    calls are wrong (a warm path of its own: a cache, a replay of the first call's launches, from
    the third call on the memory an earlier call let go of) is ``mismatch``, its time never shown;
    right every time, ``ok``."""
    class WrongOnceWarm(torch.nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.inner, self.calls = build_torch_nn(*args), 0

        def forward(self, x, hx):
            self.calls += 1
            output, h_n = self.inner(x, hx)
            return (output if self.calls < wrong_from else output * 1.01), h_n

    load = dict(load=lambda m, w: m.inner.load_state_dict(w), canonical_name=lambda n: n.removeprefix("inner."))
    lanes = [temp_lane("test-wrong-once-warm", WrongOnceWarm, **load), LANES["torch-nn"]]
    rows = runner.run(TINY[:1], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["mismatch", "ok"]
    assert rows[0]["message"].startswith("a warm call: ") and "us_per_example" not in rows[0]


def test_error_with_empty_message(temp_lane, tmp_path):
    def broken(*args):
        raise KeyError

    (row,) = runner.run(TINY[:1], [temp_lane("test-empty-error", broken)], ResultsFile(tmp_path / "r.jsonl"),
                        budget_s=0.01)
    assert row["status"] == "error" and row["message"] in ("KeyError", "KeyError: ")


def test_cuda_oom_in_build_is_recorded_as_oom(temp_lane, tmp_path, cuda_oom):
    def build(*args):
        raise cuda_oom

    lanes = [temp_lane("test-oom", build), LANES["torch-nn"]]
    rows = runner.run(TINY[:1], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["oom", "ok"]
    msg = rows[0]["message"]
    assert "CUDA out of memory. Tried to allocate 20.00 GiB" in msg  # the first line...
    assert "\n" not in msg and "Of the allocated" not in msg and len(msg) <= 230  # ...and only that
    assert "us_per_example" not in rows[0]


def test_cuda_oom_without_message_is_recorded_as_oom(temp_lane, tmp_path):
    """Found while writing these tests: str(exc).splitlines()[0] raised IndexError and stopped the run."""
    def build(*args):
        raise torch.cuda.OutOfMemoryError()

    (row,) = runner.run(TINY[:1], [temp_lane("test-oom-bare", build)], ResultsFile(tmp_path / "r.jsonl"),
                        budget_s=0.01)
    assert row["status"] == "oom" and "OutOfMemoryError" in row["message"]


def test_a_lane_out_of_memory_beside_live_steps_is_tried_again_alone(temp_lane, tmp_path, cuda_oom):
    """Lanes of a case are timed together, their steps alive at once; a lane that runs out of
    memory then is not the lane's fault: the live ones are timed and written, and it is built
    again alone. Out of memory with nothing else alive stays its row."""
    built = []

    def build(*args):
        built.append(args)
        if len(built) == 1:
            raise cuda_oom
        return build_torch_nn(*args)

    lanes = [LANES["torch-nn"], temp_lane("test-oom-once", build), LANES["torch-fused-loop"]]
    written = []
    rows = runner.run(TINY[:1], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01,
                      on_row=lambda row: written.append(row["lane"]))
    assert [r["status"] for r in rows] == ["ok", "ok", "ok"] and len(built) == 2
    assert written == [lane.name for lane in lanes]  # torch-nn first: written before the retry
    built.clear()
    rows = runner.run(TINY[:1], [lanes[1], lanes[0]], ResultsFile(tmp_path / "s.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["oom", "ok"] and len(built) == 1


class FakeClock:
    """A clock the lanes' calls advance: ``ms`` a call, three times that during a slow phase of
    the host (calls ``slow[0]`` to ``slow[1] - 1`` of the whole run, counted over every lane).
    ``log`` names the lane of every call."""

    def __init__(self, slow: tuple[int, int] = (0, 0)):
        self.now, self.calls, self.slow, self.log = 0.0, 0, slow, []

    def tick(self, lane: str, ms: float) -> None:
        self.calls += 1
        self.log.append(lane)
        self.now += 3 * ms if self.slow[0] <= self.calls < self.slow[1] else ms

    def timer(self, device):
        def run(fn):
            t0 = self.now
            fn()
            return self.now - t0

        return run

    def lanes(self, monkeypatch, temp_lane, ms: dict[str, float]) -> list:
        """Lanes named as ``ms``'s keys whose calls take that long on this clock (torch-nn's
        arithmetic, so they verify); the runner's timer reads this clock."""
        clock = self

        class Ticking(torch.nn.Module):
            def __init__(self, name, *args):
                super().__init__()
                self.name, self.inner = name, build_torch_nn(*args)

            def forward(self, x, hx):
                clock.tick(self.name, ms[self.name])
                return self.inner(x, hx)

        monkeypatch.setattr(timing, "_timer", self.timer)
        monkeypatch.setattr(runner, "matmul_peak", lambda device, dtype: Peak(2.0, 64))  # it would time on this clock
        return [temp_lane(name, lambda *args, name=name: Ticking(name, *args), load=lambda m, w: m.inner.load_state_dict(w),
                          canonical_name=lambda n: n.removeprefix("inner.")) for name in ms]


@pytest.mark.parametrize("turns, ratio", [(1, 3.0), (5, 1.0)])
def test_lanes_take_turns_so_a_slow_phase_lands_on_every_lane(monkeypatch, temp_lane, tmp_path, turns, ratio):
    """Two identical lanes and a slow phase of the host early in the run. Timed one after the
    other (1 turn) the slow phase is all the first lane's: it reads 3x slower. In 5 turns each
    lane gets its share of the slow calls and the two read the same."""
    clock = FakeClock(slow=(10, 25))
    lanes = clock.lanes(monkeypatch, temp_lane, {"test-a": 1.0, "test-b": 1.0})
    a, b = runner.run(TINY[1:], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.05, turns=turns)
    assert a["status"] == b["status"] == "ok" and a["turns"] == b["turns"] == turns
    assert a["ms_per_batch"] / b["ms_per_batch"] == ratio
    assert sum(a["samples_ms"]) >= 50.0 and sum(b["samples_ms"]) >= 50.0  # each lane's whole budget


def test_a_lane_of_slow_calls_takes_fewer_turns_spread_over_the_round(monkeypatch, temp_lane, tmp_path):
    """At 10 ms a call a 0.1 s budget holds 2 turns of 4 calls: the slow lane takes turns 0 and
    3 of 5 (not 0 and 1), the fast one all 5; each spends its whole budget."""
    clock = FakeClock()
    lanes = clock.lanes(monkeypatch, temp_lane, {"test-fast": 1.0, "test-slow": 10.0})
    fast, slow = runner.run(TINY[1:], lanes, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.1, turns=5)
    assert (fast["turns"], slow["turns"]) == (5, 2)
    assert sum(fast["samples_ms"]) >= 100.0 and sum(slow["samples_ms"]) >= 100.0
    # after each lane's first call, its warm calls verified, 2 warm-ups
    timed = clock.log[clock.log.index("test-slow") + 1 + runner.WARM_VERIFIED + 2:]
    starts = [i for i in range(len(timed)) if i == 0 or timed[i - 1] != timed[i]]
    assert [timed[i] for i in starts] == ["test-fast", "test-slow", "test-fast", "test-slow", "test-fast"]
    # between the slow lane's two turns, three of the fast lane's: each one untimed call, then
    # 20 ms of 1 ms calls (turns 0 and 1 back to back would leave one there)
    assert starts[3] - starts[2] == 3 * (1 + 20)


# --- the float64 reference: once per case, and what happens when it cannot be computed ------------

def test_reference_computed_once_per_case_and_only_when_needed(monkeypatch, tmp_path):
    calls = []
    real = runner.reference_step
    monkeypatch.setattr(runner, "reference_step", lambda case, inputs, *a: calls.append(case.key) or real(case, inputs, *a))
    out = ResultsFile(tmp_path / "r.jsonl")
    runner.run(TINY, [LANES["torch-nn-graph"], *CPU_LANES], out, budget_s=0.01)
    assert calls == [c.key for c in TINY]
    calls.clear()
    rows = runner.run(TINY, [LANES["torch-nn-graph"]], ResultsFile(tmp_path / "u.jsonl"), budget_s=0.01)
    assert calls == [] and {r["status"] for r in rows} == {"unavailable"}


PREFIX = "building the inputs and float64 reference: "


@pytest.mark.parametrize("raised, status, message", [
    (RuntimeError("boom"), "error", PREFIX + "RuntimeError: boom"),
    (torch.cuda.OutOfMemoryError("CUDA out of memory."), "oom", PREFIX + "OutOfMemoryError: CUDA out of memory."),
    (RuntimeError("[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory: you tried "
                  "to allocate 28800000000 bytes."), "oom", PREFIX + "RuntimeError: [enforce fail at alloc_cpu.cpp:121]"),
    (MemoryError(), "oom", PREFIX + "MemoryError"),
])
def test_reference_failure_recorded_for_every_lane(monkeypatch, tmp_path, raised, status, message):
    def fail(case, inputs, *args):
        raise raised

    monkeypatch.setattr(runner, "reference_step", fail)
    rows = runner.run(TINY[:1], CPU_LANES, ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == [status] * 3
    assert all(r["message"].startswith(message) for r in rows), rows[0]["message"]


def test_reference_failure_keeps_unavailable_lanes_unavailable(monkeypatch, tmp_path):
    """Found while writing these tests: a failed reference's status was given to every later lane."""
    def fail(case, inputs, *args):
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "reference_step", fail)
    rows = runner.run(TINY[:1], [LANES["torch-nn"], LANES["torch-nn-graph"]], ResultsFile(tmp_path / "r.jsonl"),
                      budget_s=0.01)
    assert [r["status"] for r in rows] == ["error", "unavailable"]
    assert rows[1]["message"] == "runs on cuda only"


# --- interruption and resume --------------------------------------------------------------------

def test_keyboard_interrupt_in_a_lane_stops_the_run_and_keeps_the_cases_done(monkeypatch, temp_lane, tmp_path):
    """The lanes of a case are timed together and written when the case is done: an interrupt
    loses the case under way, never a case already written, and frees the steps alive."""
    built = []

    def build(*args):
        built.append(args)
        if len(built) == 2:  # the lane's step for the second case
            raise KeyboardInterrupt
        return build_torch_nn(*args)

    lanes = [LANES["torch-nn"], temp_lane("test-ctrl-c", build), LANES["torch-fused-loop"]]
    path = tmp_path / "r.jsonl"
    closed = _closing(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        runner.run(TINY, lanes, ResultsFile(path), budget_s=0.01)
    rows = list(read_records(path, "result"))
    assert _pairs(rows) == [(TINY[0].key, lane.name) for lane in lanes] and all(r["status"] == "ok" for r in rows)
    assert closed == [(TINY[0].key, lane.name) for lane in lanes] + [(TINY[1].key, "torch-nn")]


def test_an_interrupt_while_a_case_is_written_keeps_all_its_rows_or_none(monkeypatch, tmp_path):
    """A case's rows go to the file in one write, so a Ctrl-C arriving between two of them (the
    progress view's callback, here) cannot keep one lane's row and lose the other's: the CLI's
    test of it (test_ctrl_c_keeps_rows_and_exits_130) once caught one row of a pair written."""
    seen = []

    def on_row(row):
        seen.append(row)
        if len(seen) == 1:  # after the first row is written, before the second is reported
            raise KeyboardInterrupt

    path = tmp_path / "r.jsonl"
    with pytest.raises(KeyboardInterrupt):
        runner.run(TINY[:1], CPU_LANES[:2], ResultsFile(path), budget_s=0.01, on_row=on_row)
    assert _pairs(read_records(path, "result")) == [(TINY[0].key, lane.name) for lane in CPU_LANES[:2]]


def _closing(monkeypatch):
    """Record (case, lane) of every step closed, by wrapping the steps that prepare_pair makes."""
    real = runner.prepare_pair
    closed = []

    def prepare_pair(case, lane, *args, **kwargs):
        pair = real(case, lane, *args, **kwargs)
        if isinstance(pair, runner.Ready):
            close = pair.step.close
            pair.step.close = lambda: (pair.step.fn and closed.append((case.key, lane.name)), close())  # once
        return pair

    monkeypatch.setattr(runner, "prepare_pair", prepare_pair)
    return closed


def _interrupt_at(monkeypatch, n):
    """Make the n-th pair prepared (1-based) raise KeyboardInterrupt; count every call."""
    real = runner.prepare_pair
    calls = []

    def prepare_pair(case, lane, *args, **kwargs):
        calls.append((case.key, lane.name))
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(case, lane, *args, **kwargs)

    monkeypatch.setattr(runner, "prepare_pair", prepare_pair)
    return calls


def _counting(monkeypatch):
    return _interrupt_at(monkeypatch, 0)


def test_resume_after_interrupt_measures_only_missing_pairs(monkeypatch, tmp_path):
    path = tmp_path / "r.jsonl"
    everything = [(c.key, lane.name) for c in TINY for lane in CPU_LANES]  # 6 pairs
    _interrupt_at(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        runner.run(TINY, CPU_LANES, ResultsFile(path), budget_s=0.01)
    before = list(read_records(path, "result"))
    assert _pairs(before) == everything[:3] and all(r["status"] == "ok" for r in before)

    calls = _counting(monkeypatch)
    new = runner.run(TINY, CPU_LANES, ResultsFile(path), resume=True, budget_s=0.01)
    assert calls == everything[3:]
    assert _pairs(new) == everything[3:]
    after = list(read_records(path, "result"))
    assert sorted(_pairs(after)) == sorted(everything) and len(after) == 6  # every pair exactly once
    assert all(r["status"] == "ok" for r in after)
    env_ids = {e["env_id"] for e in read_records(path, "env")}
    assert {r["env_id"] for r in after} <= env_ids

    calls.clear()
    assert runner.run(TINY, CPU_LANES, ResultsFile(path), resume=True, budget_s=0.01) == []
    assert calls == [] and len(list(read_records(path, "result"))) == 6


def test_without_resume_pairs_are_measured_again(monkeypatch, tmp_path):
    path = tmp_path / "r.jsonl"
    runner.run(TINY[:1], CPU_LANES[:1], ResultsFile(path), budget_s=0.01)
    runner.run(TINY[:1], CPU_LANES[:1], ResultsFile(path), budget_s=0.01)
    assert len(list(read_records(path, "result"))) == 2
    assert len(list(read_records(path, "env"))) in (1, 2)  # same machine: the record is not repeated


def test_resume_after_a_torn_last_line(monkeypatch, tmp_path):
    """Found while writing these tests: --resume appended the next row onto the torn line, making a
    corrupt middle line, after which the file could not be read at all."""
    path = tmp_path / "r.jsonl"
    everything = [(c.key, lane.name) for c in TINY for lane in CPU_LANES]
    _interrupt_at(monkeypatch, 5)
    with pytest.raises(KeyboardInterrupt):
        runner.run(TINY, CPU_LANES, ResultsFile(path), budget_s=0.01)
    with path.open("a") as f:  # killed while writing the fourth row
        f.write('{"record": "result", "cell": "gr')
    assert len(list(read_records(path, "result"))) == 3
    monkeypatch.undo()
    runner.run(TINY, CPU_LANES, ResultsFile(path), resume=True, budget_s=0.01)
    after = list(read_records(path, "result"))
    assert sorted(_pairs(after)) == sorted(everything) and len(after) == 6
    assert all(r["status"] == "ok" for r in after)
    assert all(line.startswith('{"record": ') and line.endswith("}") for line in path.read_text().splitlines())


def test_inputs_built_out_of_memory_are_recorded_and_the_run_goes_on(monkeypatch, tmp_path):
    """Building a case's inputs used to sit outside the per-pair handling: one too-big case ended
    the whole run with a traceback."""
    real = runner.make_inputs

    def make_inputs(case):
        if case.hidden_size == 5:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 14 GB")
        return real(case)

    monkeypatch.setattr(runner, "make_inputs", make_inputs)
    cases = [TINY[0], TINY[0].replace(hidden_size=6)]
    rows = runner.run(cases, CPU_LANES[:1], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["oom", "ok"]


def test_a_case_estimated_too_large_is_not_built(monkeypatch, tmp_path):
    from rnnbench import memory

    monkeypatch.setattr(memory, "available_bytes", lambda device: 10 * 2**30)  # a 10 GiB machine
    built = []
    real = runner.make_inputs
    monkeypatch.setattr(runner, "make_inputs", lambda case: built.append(case.key) or real(case))
    huge = Case(cell="lstm", batch_size=2, seq_len=3, input_size=1, hidden_size=30000)
    rows = runner.run([TINY[0], huge], CPU_LANES[:2], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["ok", "ok", "too_large", "too_large"]
    assert "GiB of host memory (estimate)" in rows[2]["message"] and "10.0 GiB available" in rows[2]["message"]
    assert built == [TINY[0].key]


def test_resume_retry_failed_measures_failed_pairs_again(tmp_path):
    path = tmp_path / "r.jsonl"
    out = ResultsFile(path)
    runner.run(TINY[:1], CPU_LANES, out, budget_s=0.01)
    rows = list(read_records(path, "result"))
    # pretend the second pair ran out of memory and the third failed last time
    lines = path.read_text().splitlines()
    edited = []
    for line in lines:
        record = json.loads(line)
        if record.get("lane") == CPU_LANES[1].name:
            record["status"] = "oom"
        if record.get("lane") == CPU_LANES[2].name:
            record["status"] = "error"
        edited.append(json.dumps(record))
    path.write_text("\n".join(edited) + "\n")
    assert runner.run(TINY[:1], CPU_LANES, ResultsFile(path), resume=True, budget_s=0.01) == []
    again = runner.run(TINY[:1], CPU_LANES, ResultsFile(path), resume=True, retry_failed=True, budget_s=0.01)
    assert [r["lane"] for r in again] == [lane.name for lane in CPU_LANES[1:]]
    assert all(r["status"] == "ok" for r in again) and len(rows) == 3
    assert runner.run(TINY[:1], CPU_LANES, ResultsFile(path), resume=True, retry_failed=True, budget_s=0.01) == []


def test_a_slow_pair_is_announced_and_its_runs_capped(temp_lane, tmp_path):
    import time as _time

    class Slow(torch.nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.rnn = build_torch_nn(*args)

        def forward(self, x, hx):
            _time.sleep(0.05)
            return self.rnn(x, hx)

    lane = temp_lane("test-slow", Slow, load=lambda m, w: m.rnn.load_state_dict(w),
                     canonical_name=lambda n: n.removeprefix("rnn."))
    notes = []
    calls = []
    real = Slow.forward
    Slow.forward = lambda self, x, hx: calls.append(1) or real(self, x, hx)
    try:
        (row,) = runner.run(TINY[1:], [lane], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.1, on_note=notes.append)
    finally:
        Slow.forward = real
    assert row["status"] == "ok" and row["runs"] == 3
    # the first call, the warm ones verified, one warm-up, three timed runs: not 2 warm-ups and 5 runs
    assert len(calls) == 1 + runner.WARM_VERIFIED + 1 + 3
    assert len(notes) == 1 and "over the 0.1 s budget" in notes[0] and "1 warm-up and 3 runs" in notes[0]


@pytest.mark.filterwarnings("ignore")  # the timed calls after the first warn too; the rows are what is checked
def test_warnings_of_a_lane_are_kept_in_its_rows(temp_lane, tmp_path):
    """A lane's warnings while it is built and first called reach its row (each distinct one once,
    category and first line) and the notes, deprecation warnings left out; a lane that gives none
    has no ``warnings`` field; the report marks the warned rows."""
    import warnings

    from rnnbench import report
    from rnnbench.results import load_results

    class Warns(torch.nn.Module):
        def __init__(self, *args):
            super().__init__()
            self.inner = build_torch_nn(*args)

        def forward(self, x, hx):
            warnings.warn("weights copied on every call\nsecond line", UserWarning)
            warnings.warn("weights copied on every call\nsecond line", UserWarning)
            warnings.warn("fell back to the slow path", RuntimeWarning)
            warnings.warn("this API is deprecated", DeprecationWarning)  # about an API, not the time: left out
            return self.inner(x, hx)

    lanes = [temp_lane("test-warns", Warns, load=lambda m, w: m.inner.load_state_dict(w),
                       canonical_name=lambda n: n.removeprefix("inner.")), LANES["torch-nn"]]
    notes = []
    path = tmp_path / "w.jsonl"
    rows = runner.run(TINY, lanes, ResultsFile(path), budget_s=0.01, on_note=notes.append)
    assert [r["status"] for r in rows] == ["ok", "ok"] * 2
    warned, quiet = rows[0], rows[1]
    assert warned["warnings"] == ["UserWarning: weights copied on every call", "RuntimeWarning: fell back to the slow path"]
    assert "warnings" not in quiet
    assert any("test-warns warned: UserWarning: weights copied" in n for n in notes)
    table = report.markdown(load_results(path))
    warned_line = next(line for line in table.splitlines() if "| test-warns" in line)
    quiet_line = next(line for line in table.splitlines() if "| torch-nn " in line)
    assert "†" in warned_line and "†" not in quiet_line
