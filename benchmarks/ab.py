"""Shared by the A/B benchmarks of our kernels (``on_chip.py``, ``strict_fp32.py``): two settings
of the same lane timed in turns in one process, and a run over cases that records as it goes.

- :func:`median_ms`: one engine step timed as the engine times a lane alone (``Step.warm_up``,
  ``Step.sample``).
- :func:`in_turns`: each setting's steps timed in a given order of turns (A B B A by default) and
  averaged, so that drift over the run (clocks, the allocator's pools, the host's load) favours
  neither.
- :func:`module_step`: a recurrent module's training step or evaluation forward, what it returns.
- :func:`rounds_ms`: several forms of one call timed in rounds of turns (A B C C B A), medians.
- :func:`run_cases`: the environment record first, then one JSON row per case as it is measured;
  a case that raises becomes a row with its error, and cases past the time budget are skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path
from typing import Callable


class OneLineParser(argparse.ArgumentParser):
    """argparse for the benchmark scripts, refusing bad input in one line (``prog: error: ...``,
    exit 2) instead of the usage block and the error; ``--help`` still shows the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser(doc: str, budget_s: float) -> argparse.ArgumentParser:
    """The options every A/B script takes: OUT_DIR, ``--budget`` (seconds for the whole run),
    ``--case-budget`` (seconds per timed measurement), ``--device`` (``cpu`` only checks the script,
    under ``TRITON_INTERPRET=1``)."""
    p = OneLineParser(description=doc.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--budget", type=float, default=budget_s, help="seconds for the whole run")
    p.add_argument("--case-budget", type=float, default=0.2, help="seconds per timed measurement")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu only checks this script (TRITON_INTERPRET=1)")
    return p


def check_device(p: argparse.ArgumentParser, device: str) -> None:
    """Refuse through ``p`` (one line, exit 2) a device the run cannot use: ``cpu`` without
    ``TRITON_INTERPRET=1`` (the kernels would not run there), ``cuda`` with no CUDA device."""
    import torch

    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        p.error("--device cpu needs TRITON_INTERPRET=1")
    if device == "cuda" and not torch.cuda.is_available():
        p.error("no CUDA device here")


def median_ms(step, budget_s: float) -> float:
    """Median ms per call of an engine ``Step``: first call, warm-up, timed runs."""
    from rnnbench.timing import summarize

    _, first_ms = step.first_call()
    return summarize(step.sample(budget_s, step.warm_up(budget_s, first_ms)), first_ms).median_ms


def in_turns(steps: dict[str, object], setting: Callable[[str], contextlib.AbstractContextManager], budget_s: float,
             order: str = "ABBA") -> dict[str, float]:
    """Mean of each setting's median ms over its turns. ``steps`` maps two setting names (A, B in
    that order) to their steps; ``setting(name)`` is the context each turn runs in; ``order`` is
    the sequence of turns, letters A and B."""
    names = list(steps)
    times: dict[str, list[float]] = {name: [] for name in names}
    for turn in order:
        name = names["AB".index(turn)]
        with setting(name):
            times[name].append(median_ms(steps[name], budget_s))
    return {name: sum(ms) / len(ms) for name, ms in times.items()}


def rounds_ms(forms: dict[str, Callable[[], object]], device: str, rounds: int = 3,
              calls: int = 10) -> dict[str, float]:
    """Each form's median ms over ``rounds`` rounds of the forms in turns forward then back (A B C
    C B A: drift over the run favours none), each turn the median of ``calls`` synchronised calls
    (``rnnbench.timing.time_call``). ``forms`` maps names to warmed-up calls."""
    import statistics

    from rnnbench.timing import time_call

    got: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(rounds):
        for name in [*forms, *reversed(forms)]:
            got[name].append(statistics.median(time_call(forms[name], device)[1] for _ in range(calls)))
    return {name: statistics.median(ms) for name, ms in got.items()}


def module_step(module, x, hx, train: bool) -> list:
    """A recurrent module's training step (the forward, a loss on the output and final states,
    ``autograd.grad`` for ``x``, the states and every parameter) or its evaluation forward under
    ``no_grad``: every tensor it returns, detached. ``hx`` a state or the LSTM's pair; a parameter
    the call leaves out gets zeros for its gradient (so a check on them sees it)."""
    import torch

    if not train:
        with torch.no_grad():
            out, finals = module(x, hx)
        return [out, *(finals if isinstance(finals, tuple) else (finals,))]
    out, finals = module(x, hx)
    finals = list(finals) if isinstance(finals, tuple) else [finals]
    loss = sum(t.float().sum() for t in [out, *finals])
    leaves = [x, *(hx if isinstance(hx, tuple) else (hx,)), *module.parameters()]
    return [out.detach(), *(f.detach() for f in finals),
            *torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)]


def check_order(order: str) -> str | None:
    """None if ``order`` is a usable sequence of turns, else why not (one line)."""
    if set(order) - set("AB") or not {"A", "B"} <= set(order):
        return f"--order takes A and B only, each at least once, got {order!r}"
    return None


def run_cases(path: Path, cases: list[tuple], fields: tuple[str, ...], measure: Callable[[tuple], dict],
              budget_s: float) -> list[dict]:
    """Measure every case, appending the environment record and then each row to ``path`` (and
    printing it) as it comes; returns the rows. ``fields`` name a case's items for an error row."""
    from rnnbench.env import environment

    path.parent.mkdir(parents=True, exist_ok=True)
    rows, start = [], time.monotonic()
    with open(path, "a") as out:
        out.write(json.dumps({"record": "env", **environment()}) + "\n")  # the machine the rows ran on
        for case in cases:
            if time.monotonic() - start > budget_s:
                print(f"budget spent: skipped {case}", flush=True)
                continue
            try:
                row = measure(case)
            except Exception as err:  # record the case and go on
                row = dict(zip(fields, case), error=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)
    return rows
