"""Run cases × lanes: verify each pair, time it, append one result row per pair.

Rows are appended (and flushed) as soon as they are measured, so an interrupted run keeps all it
measured; ``resume`` skips pairs already in the file. An out-of-memory error or a failing lane
records that pair's status and the run goes on.
"""

from __future__ import annotations

import gc
import time
from typing import Callable, Iterable

import torch

from .cases import Case
from .env import environment
from .lanes.registry import Lane
from .precision import matmul_mode, tolerance
from .results import ResultsFile, read_records
from .timing import Measurement, measure, time_call
from .verify import compare
from .workload import Inputs, lane_step, make_inputs, reference_step

STATUSES = ("ok", "mismatch", "oom", "unavailable", "error")


def base_row(case: Case, lane: Lane, env_id: str) -> dict:
    return {"record": "result", **case.to_dict(), "case_key": case.key, "lane": lane.name,
            "env_id": env_id, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def speed_fields(case: Case, m: Measurement) -> dict:
    """The seeds' unit (µs per example = time per batch / batch_size) and throughputs."""
    seconds = m.median_ms / 1e3
    return {
        "ms_per_batch": m.median_ms,
        "us_per_example": m.median_ms * 1e3 / case.batch_size,
        "sequences_per_s": case.batch_size / seconds,
        "timesteps_per_s": case.batch_size * case.seq_len / seconds,
        **{k: v for k, v in m.to_dict().items() if k != "median_ms"},
    }


def measure_pair(case: Case, lane: Lane, inputs: Inputs, reference: dict, budget_s: float) -> dict:
    """Status and figures for one (case, lane); raises only on KeyboardInterrupt."""
    skip = lane.skip_reason(case)
    if skip:
        return {"status": "unavailable", "message": skip}
    cuda = case.device == "cuda"
    try:
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        with matmul_mode(case.dtype):
            step, names = lane_step(lane, case, inputs)
            outputs, first_ms = time_call(step, case.device)
            verdict = compare(dict(zip(names, outputs)), reference, tolerance(case.cell, case.dtype))
            if not verdict.ok:
                return {"status": "mismatch", "message": verdict.message, "max_rel_error": verdict.max_rel_error}
            del outputs
            m = measure(step, case.device, budget_s=budget_s, first_call_ms=first_ms)
        peak = torch.cuda.max_memory_allocated() if cuda else None
        return {"status": "ok", "message": "", "max_rel_error": verdict.max_rel_error,
                "peak_mem_bytes": peak, **speed_fields(case, m)}
    except torch.cuda.OutOfMemoryError as exc:
        return {"status": "oom", "message": _first_line(exc)}
    except Exception as exc:  # a broken lane must not stop the run; the row says what broke
        return {"status": "error", "message": _first_line(exc)}
    finally:
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters), for a result row."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


def done_pairs(path) -> set[tuple[str, str]]:
    """(case_key, lane) pairs that already have a row in the results file."""
    return {(r["case_key"], r["lane"]) for r in read_records(path, "result")}


def run(cases: Iterable[Case], lanes: list[Lane], out: ResultsFile, *, resume: bool = False,
        budget_s: float = 0.5, on_row: Callable[[dict], None] = lambda row: None,
        on_start: Callable[[Case, Lane], None] = lambda case, lane: None) -> list[dict]:
    """Measure every (case, lane) pair not yet in ``out`` (with ``resume``); returns the new rows.

    The float64 reference is computed once per case, only if some lane of it needs checking.
    """
    env = environment()
    out.write_env(env)
    skip = done_pairs(out.path) if resume else set()
    rows = []
    for case in cases:
        todo = [lane for lane in lanes if (case.key, lane.name) not in skip]
        if not todo:
            continue
        inputs = make_inputs(case)
        reference = None
        for lane in todo:
            on_start(case, lane)
            if reference is None and lane.skip_reason(case) is None:
                reference = _reference_or_status(case, inputs)
            if isinstance(reference, str) and lane.skip_reason(case) is None:
                result = {"status": "oom" if "memory" in reference else "error", "message": reference}
            else:
                result = measure_pair(case, lane, inputs, reference, budget_s)
            row = {**base_row(case, lane, env["env_id"]), **result}
            out.append(row)
            rows.append(row)
            on_row(row)
        del reference
    return rows


def _reference_or_status(case: Case, inputs: Inputs):
    """The reference tensors, or a one-line reason they could not be computed."""
    try:
        return reference_step(case, inputs)
    except torch.cuda.OutOfMemoryError:
        return "out of memory computing the float64 reference"
    except Exception as exc:
        return f"reference failed: {_first_line(exc)}"
