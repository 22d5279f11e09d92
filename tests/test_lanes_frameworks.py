"""The lanes with their own step (``torch-compile``, and every framework's worker lane) against the
float64 reference, through the runner's own path (``runner.measure_pair``: prepare, first call,
``verify.compare``, timed repetitions), on odd sizes: batch 3, seq 7, input 37, hidden 29,
2 layers, forward and train, every cell each lane supports.

The lane list is the registry's, not written here: every lane that brings its own ``prepare`` and
runs on this machine's CPU. CI installs JAX and Keras (scripts/setup.sh), so there these are
``torch-compile``, ``jax-scan``, ``keras-jax`` and ``keras-torch``; :func:`test_ci_lanes_run_here`
fails if one of them has gone missing, rather than letting its tests vanish.
"""

from __future__ import annotations

import os

import pytest
import torch

from rnnbench import runner
from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.lanes import options as lane_options
from rnnbench.lanes.worker import close_all
from rnnbench.precision import TOLERANCE
from rnnbench.workload import expected_names, make_inputs, reference_step

# (batch, seq, input, hidden, layers): odd on purpose, so no transposition or gate split can
# pass by accident of equal sizes
ODD = dict(batch_size=3, seq_len=7, input_size=37, hidden_size=29, num_layers=2)
OWN_STEP_LANES = [name for name, lane in LANES.items() if lane.prepare is not None]
CPU_LANES = [name for name in OWN_STEP_LANES if LANES[name].unavailable("cpu") is None]
PAIRS = [pytest.param(name, cell, mode, id=f"{name}-{cell}-{mode}")
         for name in CPU_LANES for cell in LANES[name].cells for mode in ("forward", "train")]
# Verified errors are rounding only: far below the fp32 tolerance (seen: 1e-7 to 3e-7).
FP32_SEEN = 1e-5
SLOW = pytest.mark.skipif(not os.environ.get("RNNBENCH_SLOW"), reason="slow on a CPU; set RNNBENCH_SLOW=1")


@pytest.fixture(scope="module", autouse=True)
def _stop_workers():
    yield
    close_all()


def test_ci_lanes_run_here():
    """What CI must be able to verify (setup.sh installs JAX and Keras)."""
    assert {"torch-compile", "jax-scan", "keras-jax", "keras-torch"} <= set(CPU_LANES), \
        {name: LANES[name].unavailable("cpu") for name in OWN_STEP_LANES}


def _measure_through_runner(monkeypatch, case: Case, lane_name: str, budget_s: float = 0.01):
    """``runner.measure_pair`` on ``case``, keeping what the lane returned for the checks."""
    seen = {}
    real_compare = runner.compare

    def compare(outputs, reference, tolerance):
        seen.update(outputs=outputs, reference=reference)
        return real_compare(outputs, reference, tolerance)

    monkeypatch.setattr(runner, "compare", compare)
    inputs = make_inputs(case)
    result = runner.measure_pair(case, LANES[lane_name], inputs, reference_step(case, inputs), budget_s)
    return result, seen


@pytest.mark.parametrize("lane, cell, mode", PAIRS)
def test_lane_matches_reference_odd_sizes(monkeypatch, lane, cell, mode):
    case = Case(cell=cell, mode=mode, **ODD)
    result, seen = _measure_through_runner(monkeypatch, case, lane)
    assert result["status"] == "ok", result
    assert set(seen["outputs"]) == set(expected_names(case)), "output, final states and every gradient"
    for name, value in seen["outputs"].items():
        assert value.shape == seen["reference"][name].shape, name
        assert value.dtype == torch.float32 and torch.isfinite(value).all(), name
    assert result["max_rel_error"] < FP32_SEEN
    assert result["runs"] >= 3 and result["first_call_ms"] > 0 and result["ms_per_batch"] > 0
    assert len(result["samples_ms"]) == result["runs"]


@pytest.mark.parametrize("lane", [n for n in CPU_LANES if n != "torch-compile"])
def test_worker_lanes_last_step_loss_and_half_precision(monkeypatch, lane):
    """The other loss (also on a variable-length batch: each sequence's own last step), and a half
    type: inputs rounded in the worker as the reference rounds them. (tests/test_lengths.py runs
    every length lane on all-steps batches.)"""
    case = Case(cell="lstm", mode="train", loss="last_step", **ODD)
    result, _ = _measure_through_runner(monkeypatch, case, lane)
    assert result["status"] == "ok" and result["max_rel_error"] < FP32_SEEN, result
    if LANES[lane].lengths:
        case = case.replace(lengths="2:7")
        result, _ = _measure_through_runner(monkeypatch, case, lane)
        assert result["status"] == "ok" and result["max_rel_error"] < FP32_SEEN, result
    case = Case(cell="gru", mode="train", dtype="bf16", batch_size=3, seq_len=5, input_size=7, hidden_size=16)
    result, _ = _measure_through_runner(monkeypatch, case, lane)
    assert result["status"] == "ok" and result["max_rel_error"] <= TOLERANCE["bf16"], result


def test_worker_rows_say_what_ran(monkeypatch):
    """Rows of worker lanes name the framework; Keras rows say whether cuDNN was taken (never on
    a CPU) and which path Keras used; no peak memory from the runner's allocator."""
    case = Case(cell="lstm", mode="forward", **ODD)
    for lane in [n for n in CPU_LANES if n.startswith(("keras-", "jax-"))]:
        result, _ = _measure_through_runner(monkeypatch, case, lane)
        assert result["status"] == "ok", result
        assert result["framework_version"] and result["peak_mem_bytes"] is None
        if lane.startswith("keras-"):
            assert result["keras_cudnn"] is False and result["keras_use_cudnn"] == "auto"
            assert result["keras_path"] in ("backend", "generic")


def test_torch_compile_row_records_its_mode(monkeypatch):
    case = Case(cell="rnn_tanh", mode="forward", batch_size=2, seq_len=3, input_size=4, hidden_size=5)
    result, _ = _measure_through_runner(monkeypatch, case, "torch-compile")
    assert result["status"] == "ok" and result["compile_mode"] == "default" and result["compile_scope"] == "step"
    # compilation is the first call: far slower than a step
    assert result["first_call_ms"] > 10 * result["ms_per_batch"]


@SLOW
@pytest.mark.parametrize("mode", ["reduce-overhead", "max-autotune"])
def test_torch_compile_other_modes(monkeypatch, mode):
    case = Case(cell="gru", mode="train", **ODD)
    with lane_options.using(compile_mode=mode):
        result, _ = _measure_through_runner(monkeypatch, case, "torch-compile")
    assert result["status"] == "ok" and result["compile_mode"] == mode, result
