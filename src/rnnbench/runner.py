"""Run cases × lanes: verify each pair, time the lanes of a case in turns, append one result row
per pair.

A case's rows are appended (and flushed) when the case is done, so an interrupted run keeps every
case it finished; ``resume`` skips pairs already in the file (and, with ``retry_failed``, measures again
the pairs whose row says ``oom`` or ``error``). Nothing about one case can end the run: a case
estimated too large for the machine is recorded ``too_large`` without being built, an allocation
failure (CUDA or CPU) while building its inputs or reference or running a lane is recorded
``oom``, any other failure ``error``, and the run goes on.

Warnings a lane gives while it is built and first called are kept in its row (``warnings``: each
distinct one as ``Category: first line``; deprecation warnings, about libraries' APIs, left out)
and said through ``on_note``, since some change what the row's time means (see
:func:`warnings_said`).

Every ``ok`` row carries its achieved ``tflops`` (:mod:`rnnbench.flops`) and its ``peak_fraction``
of the device's dense matmul peak in the case's dtype (``peak_tflops``, measured once per run and
(device, dtype) by :mod:`rnnbench.peak`, when the first row of that pair is ``ok``).
"""

from __future__ import annotations

import gc
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch

from .cases import Case
from .env import environment
from .flops import case_flops
from .lanes.registry import Lane
from .memory import too_large
from .peak import Peak, matmul_peak
from .precision import matmul_mode, tolerance
from .results import ResultsFile, read_records
from .timing import DEFAULT_TURNS, Measurement, RunCounts, run_plan, summarize
from .verify import Verdict, compare
from .workload import Inputs, Step, lane_step, make_inputs, reference_step, valid_only

STATUSES = ("ok", "mismatch", "oom", "too_large", "unavailable", "error")
# Statuses that --retry-failed measures again on --resume: the failure may not recur.
RETRYABLE = ("oom", "error")


def base_row(case: Case, lane: Lane, env_id: str, run_index: int | None = None) -> dict:
    """The fields every row of a pair has; with ``run_index`` (one of ``rnnbench run --runs N``'s
    processes) also ``run`` (1 to N) and the measuring process's ``pid``."""
    row = {"record": "result", **case.to_dict(), "case_key": case.key, "lane": lane.name,
           "env_id": env_id, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if run_index is not None:
        row.update(run=run_index, pid=os.getpid())
    return row


def speed_fields(case: Case, m: Measurement, useful_timesteps: int | None = None) -> dict:
    """The seeds' unit (µs per example = time per batch / batch_size) and throughputs.

    ``timesteps_per_s`` counts the padded batch (batch_size × seq_len); ``useful_timesteps_per_s``
    only the steps of real data (the sum of the lengths of a variable-length batch), so the cost
    of padding shows. ``tflops`` is the matmul work of the useful steps
    (:func:`rnnbench.flops.case_flops`) over the median time, in TFLOP/s."""
    seconds = m.median_ms / 1e3
    useful = case.batch_size * case.seq_len if useful_timesteps is None else useful_timesteps
    return {
        "ms_per_batch": m.median_ms,
        "us_per_example": m.median_ms * 1e3 / case.batch_size,
        "sequences_per_s": case.batch_size / seconds,
        "timesteps_per_s": case.batch_size * case.seq_len / seconds,
        "useful_timesteps_per_s": useful / seconds,
        "tflops": case_flops(case, useful) / seconds / 1e12,
        **{k: v for k, v in m.to_dict().items() if k != "median_ms"},
    }


def peak_fields(tflops: float, peak: Peak | None) -> dict:
    """An ``ok`` row's ``peak_tflops``, ``peak_matmul_size`` (the n of the n³ matmul) and
    ``peak_fraction`` (achieved / peak); nothing when the peak could not be measured."""
    if peak is None:
        return {}
    return {"peak_tflops": peak.tflops, "peak_matmul_size": peak.size, "peak_fraction": tflops / peak.tflops}


def run_peak(case: Case, peaks: dict, on_note: Callable[[str], None]) -> Peak | None:
    """The matmul peak of ``case``'s (device, dtype), measured on first use and kept in ``peaks``;
    None (said once through ``on_note``) when measuring it failed, e.g. out of memory."""
    key = (case.device, case.dtype)
    if key not in peaks:
        try:
            peaks[key] = matmul_peak(*key)
        except Exception as exc:  # a missing denominator must not cost the rows their times
            peaks[key] = None
            on_note(f"the {case.dtype} matmul peak on {case.device} could not be measured "
                    f"({_first_line(exc)}); rows get no peak_fraction")
        finally:
            _free(case.device == "cuda")
    return peaks[key]


def is_oom(exc: BaseException) -> bool:
    """An allocation failure: CUDA's, Python's, or the CPU allocator's (a RuntimeError that says
    it could not allocate)."""
    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "not enough memory" in text
                                              or "out of memory" in text)


def failure(exc: BaseException) -> dict:
    """The status and message of a row whose work raised ``exc``."""
    return {"status": "oom" if is_oom(exc) else "error", "message": _first_line(exc)}


@dataclass
class Ready:
    """A lane verified on a case and warmed up, its step alive, waiting for its timed runs.
    ``result`` holds the row's fields so far (``ok`` with the error and the memory); ``samples``
    gathers the timed runs' ms over the turns."""

    lane: Lane
    step: Step
    first_ms: float
    runs: RunCounts
    result: dict
    warned: dict
    held_bytes: int = 0  # device memory the live step holds (its weights, buffers, graph pool)
    samples: list[float] = field(default_factory=list)


# Warm calls verified after the first, each on its own: ``rnnbench.nn``'s eager forward replays its
# first call's launches from the second call on, and from the third writes into memory an earlier
# call let go of (``ops/replay.py``), which is what every timed call does.
WARM_VERIFIED = 2


def _warm_verdict(step, inputs: Inputs, reference: dict, tolerance_: float) -> Verdict:
    """The verdict on :data:`WARM_VERIFIED` calls of ``step`` after its first (``first_call`` runs
    one call and returns its outputs, let go of before the next), the worst of them: what is timed
    must be what was verified."""
    worst = None
    for _ in range(WARM_VERIFIED):
        verdict = compare(valid_only(step.first_call()[0], inputs), reference, tolerance_)
        if not verdict.ok:
            return Verdict(False, verdict.max_rel_error, verdict.worst, f"a warm call: {verdict.message}")
        if worst is None or verdict.max_rel_error > worst.max_rel_error:
            worst = verdict
    return worst


def prepare_pair(case: Case, lane: Lane, inputs: Inputs, reference: dict, budget_s: float,
                 on_note: Callable[[str], None] = lambda text: None, held_bytes: int = 0) -> Ready | dict:
    """Build ``lane``'s step for ``case``, call it once, verify what it returned against
    ``reference`` and warm it up: a :class:`Ready` pair, or the row's fields when it failed
    (``mismatch``, ``oom``, ``error``; its step closed). ``held_bytes`` is the device memory that
    other pairs' live steps hold, left out of this row's ``peak_mem_bytes``. Raises only on
    KeyboardInterrupt."""
    cuda = case.device == "cuda"
    step = None
    try:
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        with matmul_mode(case.dtype):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # every warning of this pair, not once per process
                for quiet in (DeprecationWarning, PendingDeprecationWarning):  # about libraries' APIs, not times
                    warnings.simplefilter("ignore", quiet)
                step = lane_step(lane, case, inputs)
                outputs, first_ms = step.first_call()
                verdict = compare(valid_only(outputs, inputs), reference, tolerance(case.cell, case.dtype))
                del outputs
                if verdict.ok:  # and warm calls, as the timed ones are (a lane may take another path once warm)
                    warm = _warm_verdict(step, inputs, reference, tolerance(case.cell, case.dtype))
                    verdict = warm if not warm.ok or warm.max_rel_error > verdict.max_rel_error else verdict
            said = warnings_said(caught)
            if said:
                on_note(f"{case.key} · {lane.name} warned: {'; '.join(said)}")
            if not verdict.ok:
                return {"status": "mismatch", "message": verdict.message, "max_rel_error": verdict.max_rel_error,
                        **_warned(said), **step.extra}
            warmup, runs = run_plan(first_ms, budget_s)
            if runs < run_plan(0.0, budget_s)[1]:
                on_note(f"{case.key} · {lane.name}: the first call took {first_ms / 1e3:.1f} s, over the "
                        f"{budget_s:g} s budget; if the next are as slow (not compiling), timing {warmup} "
                        f"warm-up and {runs} runs (about {first_ms * (warmup + runs) / 1e3:.0f} s)")
            counts = step.warm_up(budget_s, first_ms)
        peak = torch.cuda.max_memory_allocated() - held_bytes if cuda else None
        ready = Ready(lane, step, first_ms, counts, {"status": "ok", "message": "", "max_rel_error": verdict.max_rel_error,
                                                     "peak_mem_bytes": peak}, _warned(said),
                      torch.cuda.memory_allocated() - before if cuda else 0)
        step = None  # alive until its runs are timed
        return ready
    except Exception as exc:  # a broken lane must not stop the run; the row says what broke
        return failure(exc)
    finally:
        if step is not None:
            step.close()
            del step
            _free(cuda)


def time_in_turns(ready: list[Ready], case: Case, budget_s: float, turns: int,
                  useful_timesteps: int | None = None) -> list[dict]:
    """Time the ready pairs of ``case`` in turns and close their steps; each pair's row fields,
    in order (``useful_timesteps`` as :func:`speed_fields` takes it).

    Every pair gets ``budget_s`` seconds of timed runs, in ``turns`` turns of ``budget_s / turns``
    taken one pair after another, round and round: a slow phase of the host (another process,
    the clock, the allocator) then lands on every pair of the case instead of on whichever pair
    was being timed, so their ratios hold. A turn after the first starts with one untimed call,
    since the other pairs ran in between. A pair of slow calls takes fewer, longer turns, spread
    over the round (:meth:`rnnbench.timing.RunCounts.turns`). A pair that raises while timed gets
    a failure row; the others go on."""
    results: dict[int, dict] = {}
    own = [r.runs.turns(turns, budget_s) for r in ready]
    try:
        with matmul_mode(case.dtype):
            for turn in range(turns):
                for i, r in enumerate(ready):
                    part = turn * own[i] // turns  # a pair of fewer turns takes them spread out
                    if i in results or (turn > 0 and part == (turn - 1) * own[i] // turns):
                        continue
                    try:
                        if part > 0:
                            r.step.sample(0.0, RunCounts(1, 1))  # untimed: the other pairs ran in between
                        r.samples += r.step.sample(budget_s / own[i], r.runs.share(own[i], part))
                    except Exception as exc:  # this pair's row says what broke; the others go on
                        results[i] = failure(exc)
                        r.step.close()
        for i, r in enumerate(ready):
            if i not in results:
                m = summarize(r.samples, r.first_ms, own[i])
                results[i] = {**r.result, **speed_fields(case, m, useful_timesteps), **r.warned, **r.step.extra}
        return [results[i] for i in range(len(ready))]
    finally:
        for r in ready:
            r.step.close()
        _free(case.device == "cuda")


def measure_pair(case: Case, lane: Lane, inputs: Inputs, reference: dict, budget_s: float,
                 on_note: Callable[[str], None] = lambda text: None) -> dict:
    """Status and figures for one (case, lane) timed alone given the case's ``reference`` (as the
    lane's :meth:`~rnnbench.lanes.registry.Lane.final_states` needs it); raises only on
    KeyboardInterrupt."""
    pair = prepare_pair(case, lane, inputs, reference, budget_s, on_note)
    if not isinstance(pair, Ready):
        return pair
    return time_in_turns([pair], case, budget_s, 1, inputs.useful_timesteps)[0]


def warnings_said(caught: list[warnings.WarningMessage]) -> list[str]:
    """Each distinct warning as ``Category: first line`` (at most 200 characters), in the order
    first given. A lane's warnings can change what its time means: PyTorch copying a bf16 RNN's
    weights into one buffer on every call, Keras leaving its cuDNN path, a fallback of ours."""
    said: list[str] = []
    for w in caught:
        text = _headline(w.category.__name__, w.message)
        if text not in said:
            said.append(text)
    return said


def _warned(said: list[str]) -> dict:
    """A row's ``warnings`` field: only on rows whose lane warned."""
    return {"warnings": said} if said else {}


def _free(cuda: bool) -> None:
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters), for a result row."""
    return _headline(type(exc).__name__, exc).rstrip(": ")


def _headline(name: str, message) -> str:
    """``name: first line of message`` (at most 200 characters of it)."""
    lines = str(message).strip().splitlines()
    return f"{name}: {lines[0][:200] if lines else ''}"


def done_pairs(path, retry_failed: bool = False, run_index: int | None = None) -> set[tuple[str, str]]:
    """(case_key, lane) pairs the results file already answers for run ``run_index`` (a row
    without a ``run`` is run 1, as is a single run's): every pair with a row, less (with
    ``retry_failed``) those whose latest row is ``oom`` or ``error``."""
    run_index = run_index or 1
    latest = {(r["case_key"], r["lane"]): r.get("status") for r in read_records(path, "result")
              if r.get("run", 1) == run_index}
    return {pair for pair, status in latest.items() if not (retry_failed and status in RETRYABLE)}


class Prepared:
    """A case's inputs and its float64 references, made on first use: one with the final states
    (every lane but a padded one) and, if a lane needs it, one without (see workload).

    Raises (from :meth:`reference`): whatever building them raised (see :func:`prepare_case`).
    """

    def __init__(self, case: Case):
        self.case = case
        self.inputs = make_inputs(case)
        self.references: dict[bool, dict] = {}

    def reference(self, final_states: bool) -> dict:
        if final_states not in self.references:
            self.references[final_states] = reference_step(self.case, self.inputs, final_states)
        return self.references[final_states]


def prepare_case(case: Case, prepared: Prepared | dict | None, final_states: bool):
    """``(prepared, reference)`` for ``case``, reusing ``prepared``, or a row fragment
    ``{"status", "message"}`` saying why they could not be made (estimated too large, out of
    memory, or another failure; a failure is kept and given to every later lane of the case)."""
    if isinstance(prepared, dict):
        return prepared, None
    reason = too_large(case) if prepared is None else None
    if reason:
        return {"status": "too_large", "message": reason}, None
    try:
        prepared = prepared or Prepared(case)
        return prepared, prepared.reference(final_states)
    except Exception as exc:
        result = failure(exc)
        result["message"] = f"building the inputs and float64 reference: {result['message']}"
        return result, None
    finally:
        gc.collect()


class CaseRows:
    """The pairs of one case under way, in lane order: rows already decided (unavailable,
    mismatch, failed) and :class:`Ready` pairs waiting for their turns. :meth:`write` times the
    ready ones and hands every row to ``write_rows`` at once, in lane order (which writes them in
    one append: an interrupt lands before or after all of them); :meth:`close` frees what is still
    alive (a run interrupted before :meth:`write` loses these rows, and ``--resume`` measures them)."""

    def __init__(self, case: Case, write_rows: Callable[[list[tuple[Lane, dict]]], None], budget_s: float,
                 turns: int):
        self.case, self.write_rows, self.budget_s, self.turns = case, write_rows, budget_s, turns
        self.pending: list[tuple[Lane, Ready | dict]] = []
        self.useful_timesteps: int | None = None  # the case's inputs', once a pair is prepared

    def alive(self) -> list[Ready]:
        """The ready pairs, their steps alive."""
        return [r for _, r in self.pending if isinstance(r, Ready)]

    def held_bytes(self) -> int:
        """Device memory the live steps hold."""
        return sum(r.held_bytes for r in self.alive())

    def add(self, lane: Lane, unavailable: str | None, prepared: Prepared | dict | None, reference: dict | None,
            on_note: Callable[[str], None]) -> None:
        """Decide ``lane``'s row or make it ready: ``unavailable`` (the lane's reason), the case's
        own failure (``prepared`` a row fragment), or :func:`prepare_pair`. A lane out of memory
        while other steps are alive is tried again alone after those are timed and written; a
        lane whose step cannot take turns (:attr:`rnnbench.workload.Step.in_turns`) is timed at
        once."""
        result = {"status": "unavailable", "message": unavailable} if unavailable else prepared
        if isinstance(result, Prepared):
            self.useful_timesteps = prepared.inputs.useful_timesteps
            args = (self.case, lane, prepared.inputs, reference, self.budget_s, on_note)
            result = prepare_pair(*args, held_bytes=self.held_bytes())
            if isinstance(result, dict) and result["status"] == "oom" and self.alive():
                self.write()
                result = prepare_pair(*args)
            if isinstance(result, Ready) and not result.step.in_turns:
                result = time_in_turns([result], self.case, self.budget_s, 1, self.useful_timesteps)[0]
        self.pending.append((lane, result))

    def write(self) -> None:
        """Time the ready pairs in turns, then write every pending row in lane order."""
        ready = self.alive()
        timed = iter(time_in_turns(ready, self.case, self.budget_s, self.turns, self.useful_timesteps) if ready else ())
        pending, self.pending = self.pending, []
        self.write_rows([(lane, next(timed) if isinstance(result, Ready) else result) for lane, result in pending])

    def close(self) -> None:
        for _, result in self.pending:
            if isinstance(result, Ready):
                result.step.close()
        self.pending = []


def run(cases: Iterable[Case], lanes: list[Lane], out: ResultsFile, *, resume: bool = False,
        retry_failed: bool = False, budget_s: float = 0.5, turns: int = DEFAULT_TURNS,
        on_row: Callable[[dict], None] = lambda row: None,
        on_start: Callable[[Case, Lane], None] = lambda case, lane: None,
        on_note: Callable[[str], None] = lambda text: None, run_index: int | None = None) -> list[dict]:
    """Measure every (case, lane) pair not yet in ``out`` (with ``resume``; for ``run_index``, one
    of ``rnnbench run --runs N``'s processes, whose rows say which: :func:`base_row`); returns the
    new rows.

    The inputs and float64 reference are made once per case, only if some lane of it can run.
    The lanes of a case are verified one by one and then timed together in ``turns`` turns
    (:func:`time_in_turns`); their rows are written, in lane order, when the case is done, so an
    interrupted run loses only the case under way (see :class:`CaseRows` for the two exceptions).
    ``on_start`` is told of each pair before it is built, ``on_row`` of each row once it is
    written, ``on_note`` of anything a user waiting should know (a pair that will take long).
    """
    env = environment()
    peaks: dict[tuple[str, str], Peak | None] = {}
    out.write_env(env)
    skip = done_pairs(out.path, retry_failed, run_index) if resume else set()
    rows = []
    for case in cases:

        def write_rows(results: list[tuple[Lane, dict]], case=case) -> None:
            written = []
            for lane, result in results:
                if result["status"] == "ok":
                    result.update(peak_fields(result["tflops"], run_peak(case, peaks, on_note)))
                written.append({**base_row(case, lane, env["env_id"], run_index), **result})
            out.extend(written)  # one write: an interrupt keeps all of a case's rows or none
            for row in written:
                rows.append(row)
                on_row(row)

        pairs = CaseRows(case, write_rows, budget_s, turns)
        prepared = reference = None
        try:
            for lane in (lane for lane in lanes if (case.key, lane.name) not in skip):
                on_start(case, lane)
                unavailable = lane.skip_reason(case)
                if unavailable is None:
                    prepared, reference = prepare_case(case, prepared, lane.final_states(case))
                pairs.add(lane, unavailable, prepared, reference, on_note)
            pairs.write()
        finally:
            pairs.close()
        del prepared, reference
        _free(case.device == "cuda")
    return rows
