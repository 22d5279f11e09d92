"""Device-synchronised timing: the one clock of the package.

Work on a GPU is asynchronous: a host clock read right after a launch measures the launch, not
the work (the seed word-LM benchmark's implausible Titan X evaluation speed is the classic case).
Two ways of timing share this module:

- :func:`measure` (the micro-benchmark): every repetition of a callable is bracketed by CUDA
  events after a synchronize, and the elapsed times are read after a final synchronize. On the
  CPU a monotonic host clock is used. It is :func:`warm_up` then :func:`sample`; the runner calls
  those two itself to time the lanes of a case in turns.
- :class:`PhaseClock` (the language model): one host clock over a whole phase of batches (an
  epoch's training, an evaluation pass), started and stopped only after :func:`synchronize`,
  with the first batches of the phase left out as warm-up.

torch is imported only where a CUDA device is timed or synchronised, so the worker processes of
other frameworks (which must not load a second framework) time their calls with these same rules
and statistics.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # annotations only: torch itself is imported where CUDA is used
    import torch

NOISY_SPREAD = 0.10  # (p80 - p20) / median above this marks a measurement as noisy
# Batches at the start of a phase that a PhaseClock leaves out of its figure: they hold cuDNN plan
# search, allocator growth and lazy initialisation.
PHASE_WARMUP_BATCHES = 3
# A call whose first run alone shows that the usual warm-up and minimum runs would overrun the
# budget gets the fewest runs a median needs: one warm-up and three timed runs.
LONG_CALL_WARMUP, LONG_CALL_RUNS = 1, 3
# Turns the lanes of a case take to time their runs (``rnnbench run --turns``): on the H100 the
# run-to-run spread of glample's triton/torch-nn ratios was 1.05 (median of 8 cases, 4 runs each)
# at 20 turns, 1.09 at 5 and 1.13 at 1 (benchmarks/results/h100/turns/).
DEFAULT_TURNS = 20
# A lane takes fewer turns than asked where its calls are slow: each turn holds at least this many
# timed calls, so the untimed call that opens a turn costs at most a quarter of the timed ones.
MIN_RUNS_PER_TURN = 4


@dataclass(frozen=True)
class Measurement:
    """Repeated timings of one callable, in milliseconds.

    ``median`` is the figure reported; ``p20``/``p80`` bound the middle 60 % of the runs; ``noisy``
    is set when that spread exceeds 10 % of the median (as torch.utils.benchmark warns).
    ``samples_ms`` keeps every timed run (sorted), so two runs can be compared with a confidence
    interval later (``rnnbench compare``). ``turns`` is how many turns the runs were taken in,
    each turn interleaved with the other lanes of the case (1: all in one go).
    """

    median_ms: float
    p20_ms: float
    p80_ms: float
    runs: int
    first_call_ms: float
    samples_ms: tuple[float, ...] = ()
    turns: int = 1

    @property
    def spread(self) -> float:
        return (self.p80_ms - self.p20_ms) / self.median_ms if self.median_ms > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    def to_dict(self) -> dict:
        fields = asdict(self)
        fields["samples_ms"] = [float(f"{v:.5g}") for v in self.samples_ms]  # 5 digits is below the noise
        return {**fields, "spread": self.spread, "noisy": self.noisy}


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of an already sorted list."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _timer(device: str) -> Callable[[Callable[[], object]], float]:
    """A function that runs ``fn`` once and returns its duration in ms, synchronised."""
    if device == "cuda":
        import torch

        def run(fn):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        return run

    # Any other device: the host clock. A caller on an asynchronous device that is not torch's
    # (JAX on a GPU, say) passes a ``fn`` that blocks until its work is done.
    def run(fn):
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    return run


def time_call(fn: Callable[[], object], device: str) -> tuple[object, float]:
    """Run ``fn`` once; return its result and its synchronised duration in ms."""
    box = []
    ms = _timer(device)(lambda: box.append(fn()))
    return box[0], ms


def run_plan(first_call_ms: float, budget_s: float, warmup_runs: int = 2, min_runs: int = 5) -> tuple[int, int]:
    """``(warm-up runs, minimum timed runs)`` for a call whose first run took ``first_call_ms``:
    the usual ones, or (1, 3) when those alone would take longer than ``budget_s``."""
    if first_call_ms * (warmup_runs + min_runs) > budget_s * 1e3:
        return min(warmup_runs, LONG_CALL_WARMUP), min(min_runs, LONG_CALL_RUNS)
    return warmup_runs, min_runs


@dataclass(frozen=True)
class RunCounts:
    """How many timed runs a warmed-up call gets: at least ``min_runs``, at most ``max_runs``,
    and in between as many as the budget holds; ``call_ms`` is the call's time as planned (the
    faster of the first call and the first warm-up)."""

    min_runs: int
    max_runs: int
    call_ms: float = 0.0

    @property
    def long_call(self) -> bool:
        """On the long-call plan: exactly the fewest runs a median needs."""
        return self.min_runs == self.max_runs

    def turns(self, turns: int, budget_s: float) -> int:
        """How many of ``turns`` turns these runs take: one on the long-call plan (its few runs
        in one go), else as many as hold :data:`MIN_RUNS_PER_TURN` calls each, at least one."""
        if self.long_call:
            return 1
        fits = int(budget_s * 1e3 / (MIN_RUNS_PER_TURN * self.call_ms)) if self.call_ms > 0 else turns
        return max(1, min(turns, fits))

    def share(self, turns: int, turn: int) -> "RunCounts":
        """This turn's part when the runs are spread over ``turns`` turns (the remainders go to
        the first turns, so the parts add up to the whole)."""
        part = lambda n: n // turns + (turn < n % turns)  # noqa: E731
        return RunCounts(part(self.min_runs), part(self.max_runs), self.call_ms)


def warm_up(fn: Callable[[], object], device: str, *, budget_s: float, first_call_ms: float | None = None,
            warmup_runs: int = 2, min_runs: int = 5, max_runs: int = 1000) -> tuple[float, RunCounts]:
    """Call ``fn`` first (unless ``first_call_ms`` says it was called) and ``warmup_runs`` times
    untimed; return the first call's ms and the timed runs the call gets.

    The budget is a limit, not only a target: when a call shows that the warm-up and the minimum
    runs alone would overrun it, :func:`run_plan` cuts them to one warm-up and exactly three
    runs, so a pair costs about its first call plus four more, however slow each call is. The
    call that decides is the faster of the first and the first warm-up (which is timed for
    this): a first call that compiles (``torch.compile``, ``jax.jit``) says nothing about the
    calls after it."""
    timed = _timer(device)
    first = timed(fn) if first_call_ms is None else first_call_ms
    warm = timed(fn) if warmup_runs > 0 else first  # the first warm-up, timed only to plan
    call_ms = min(first, warm)
    planned_warmup, planned_runs = run_plan(call_ms, budget_s, warmup_runs, min_runs)
    for _ in range(planned_warmup - 1):
        fn()
    if planned_runs < min_runs:  # the long-call plan: the fewest runs a median needs, no more
        return first, RunCounts(planned_runs, planned_runs, call_ms)
    return first, RunCounts(planned_runs, max(max_runs, planned_runs), call_ms)


def sample(fn: Callable[[], object], device: str, *, budget_s: float, runs: RunCounts) -> list[float]:
    """Timed calls of a warmed-up ``fn`` (ms each), until ``budget_s`` seconds of measured time
    and at least ``runs.min_runs``, at most ``runs.max_runs``."""
    timed = _timer(device)
    samples: list[float] = []
    spent = 0.0
    while len(samples) < runs.min_runs or (spent < budget_s * 1e3 and len(samples) < runs.max_runs):
        samples.append(timed(fn))
        spent += samples[-1]
    return samples


def summarize(samples: list[float], first_call_ms: float, turns: int = 1) -> Measurement:
    """The :class:`Measurement` of timed runs ``samples`` (ms, in any order)."""
    ordered = sorted(samples)
    return Measurement(statistics.median(ordered), _quantile(ordered, 0.2), _quantile(ordered, 0.8),
                       len(ordered), first_call_ms, tuple(ordered), turns)


def measure(fn: Callable[[], object], device: str, *, budget_s: float = 0.5, min_runs: int = 5,
            max_runs: int = 1000, warmup_runs: int = 2, first_call_ms: float | None = None) -> Measurement:
    """Time ``fn`` alone: its first call, ``warmup_runs`` untimed calls (:func:`warm_up`), then
    repetitions until ``budget_s`` seconds of measured time and at least ``min_runs`` (at most
    ``max_runs``; :func:`sample`).

    The first call holds one-off costs (cuDNN plan search, CUDA graph capture, compilation) and is
    reported separately, never mixed into the median. Pass ``first_call_ms`` when the caller
    already made (and timed) the first call, e.g. to verify its result. Several callables timed
    against each other take turns instead (:func:`rnnbench.runner.time_in_turns`).
    """
    first, runs = warm_up(fn, device, budget_s=budget_s, first_call_ms=first_call_ms, warmup_runs=warmup_runs,
                          min_runs=min_runs, max_runs=max_runs)
    return summarize(sample(fn, device, budget_s=budget_s, runs=runs), first)


def synchronize(device: torch.device | str) -> None:
    """Wait until every kernel queued on ``device`` has finished (a no-op on the CPU).

    CUDA kernels run asynchronously: the Python call returns as soon as the work is *queued*. A
    host clock read without this measures how fast Python can queue work, not how fast the GPU
    does it. Seed 002 (k-kawakami/rnn_benchmark) shows what that looks like: its GTX Titan X
    "evaluated" at 4.4M words/s, faster than both P100s (3.4M and 3.7M) although it trained 35%
    slower -- a forward-only pass queues quickly, and the clock was read while the GPU still
    had the work in its queue. Every clock read of a :class:`PhaseClock` comes after this call.
    """
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class PhaseClock:
    """Words/s and ms/batch over one phase of ``n_batches`` batches, warm-up excluded.

    Call :meth:`batch_done` after each batch has been *queued*; the clock starts (after a
    synchronisation, so the warm-up batches are finished, not merely queued) once the first
    ``warmup`` batches are done, and :meth:`stop` synchronises again before reading it. With
    ``n_batches <= warmup`` all but the last batch are skipped, so a short phase still gets a
    figure from one batch.

    Args:
        device: where the batches run (``cpu`` or ``cuda[:i]``).
        n_batches: how many batches the phase will run (0 is allowed: no figure).
        warmup: batches left out at the start (default :data:`PHASE_WARMUP_BATCHES`).
    """

    def __init__(self, device: torch.device | str, n_batches: int, warmup: int = PHASE_WARMUP_BATCHES):
        import torch

        self.device = torch.device(device)
        self.skip = max(min(warmup, n_batches - 1), 0)
        self.seen = self.words = self.batches = 0  # batches seen; words and batches timed
        self.t0: float | None = None
        if self.skip == 0:
            self._start()

    def _start(self) -> None:
        synchronize(self.device)  # the warm-up batches must be finished, not merely queued
        self.t0 = time.perf_counter()

    def batch_done(self, words: int) -> None:
        """One batch of ``words`` predicted tokens has been queued."""
        self.seen += 1
        if self.seen <= self.skip:
            if self.seen == self.skip:
                self._start()
            return
        self.words += words
        self.batches += 1

    def stop(self) -> tuple[float | None, float | None]:
        """``(words per second, milliseconds per batch)`` of the timed batches; ``(None, None)``
        when none was timed (no batch, or only warm-up)."""
        synchronize(self.device)  # the clock stops when the GPU is done, not when Python is
        if self.t0 is None or self.batches == 0:
            return None, None
        elapsed = time.perf_counter() - self.t0
        return self.words / elapsed, 1e3 * elapsed / self.batches
