"""The ``triton`` lane: built on rnnbench.nn, verified and timed by the engine like every torch
lane (here on CPU tensors under the interpreter), and offered on the CPU only when interpreted."""

from __future__ import annotations

import pytest
import torch

from rnnbench import runner
from rnnbench.cases import CELLS, Case
from rnnbench.lanes import LANES
from rnnbench.precision import tolerance
from rnnbench.results import ResultsFile
from rnnbench.verify import compare
from rnnbench.workload import expected_names, lane_step, make_inputs, reference_step, valid_only

_REGISTERED = "triton" in LANES
from rnnbench.lanes.triton import build_triton, make_graph_lane, make_lane  # noqa: E402  (registers the lanes)

if not _REGISTERED:  # registering is lanes/__init__'s job; leave LANES as the other tests expect it
    LANES.pop("triton", None)
    LANES.pop("triton-graph", None)


def test_the_graph_lane_is_the_same_modules_replayed_from_a_cuda_graph(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # a CUDA graph needs CUDA, interpreter or not
    lane = make_graph_lane()
    assert lane.cuda_graph and lane.build is build_triton and lane.devices == ("cuda",)
    assert lane.unavailable("cpu")


def test_cpu_is_offered_only_under_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert make_lane().devices == ("cuda",)
    assert make_lane().unavailable("cpu")  # a reason: no CPU (or no Triton at all)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert make_lane().devices == ("cuda", "cpu")
    assert make_lane().requires == ("triton",)


def test_modules_are_the_drop_ins_forced_onto_the_kernels():
    from rnnbench import nn as rnn

    module = build_triton("rnn_relu", 5, 37, 2)
    assert isinstance(module, rnn.RNN) and module.nonlinearity == "relu" and module.backend == "triton"
    assert isinstance(build_triton("lstm", 5, 37, 1), torch.nn.LSTM)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_lane_verifies_against_the_reference(cell, dtype):
    case = Case(cell=cell, batch_size=3, seq_len=7, input_size=5, hidden_size=37, num_layers=2, dtype=dtype)
    inputs = make_inputs(case)
    outputs, _ = lane_step(make_lane(), case, inputs).first_call()
    reference = reference_step(case, inputs)
    assert set(outputs) == set(reference) == set(expected_names(case)), "output, final states, every gradient"
    verdict = compare(outputs, reference, tolerance(cell, dtype))
    assert verdict.ok, verdict.message


@pytest.mark.usefixtures("interpreter")
def test_runner_times_the_lane(tmp_path):
    cases = [Case(cell="gru", batch_size=3, seq_len=5, input_size=4, hidden_size=37, mode=mode, loss=loss)
             for mode, loss in (("train", "all_steps"), ("forward", "last_step"))]
    rows = runner.run(cases, [make_lane()], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.02)
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    assert all(r["max_rel_error"] <= tolerance("gru", "fp32") and r["us_per_example"] > 0 for r in rows)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("mode", ["train", "forward"])
@pytest.mark.parametrize("cell", CELLS)
def test_lane_takes_variable_lengths_padded_with_their_lengths(cell, mode):
    """A variable-length case, the padded batch and its lengths (``module(x, hx, lengths)``, no
    packing): valid outputs, each sequence's own final states and every gradient verified."""
    lane = make_lane()
    assert lane.lengths == "masked"
    case = Case(cell=cell, batch_size=5, seq_len=7, input_size=5, hidden_size=37, num_layers=2, mode=mode,
                lengths="1:7")
    inputs = make_inputs(case)
    assert len(set(inputs.lengths.tolist())) > 1
    outputs, _ = lane_step(lane, case, inputs).first_call()
    reference = reference_step(case, inputs)
    assert set(outputs) == set(reference) == set(expected_names(case))
    verdict = compare(valid_only(outputs, inputs), reference, tolerance(cell, "fp32"))
    assert verdict.ok, verdict.message
