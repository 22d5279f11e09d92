"""rnnbench.verify: the relative-error check, and that the runner refuses to time a wrong lane."""

from __future__ import annotations

import math

import pytest
import torch

from rnnbench import runner
from rnnbench.cases import CELLS, GATES, Case
from rnnbench.lanes import LANES
from rnnbench.lanes.registry import load_state_dict
from rnnbench.lanes.torch_nn import build_torch_nn
from rnnbench.precision import TOLERANCE
from rnnbench.results import ResultsFile, read_records
from rnnbench.verify import compare, relative_error

REF = {"output": torch.tensor([3.0, 4.0], dtype=torch.float64), "grad_x": torch.ones(2, 2, dtype=torch.float64)}


def test_relative_error():
    ref = torch.tensor([3.0, 4.0])  # norm 5
    assert relative_error(ref.clone(), ref) == 0.0
    assert relative_error(torch.tensor([3.0, 4.5]), ref) == pytest.approx(0.1)
    assert relative_error(torch.zeros(2), torch.zeros(2)) == 0.0
    assert relative_error(torch.tensor([0.0, 1e-3]), torch.zeros(2)) == pytest.approx(1e-3)  # |ref| = 0: absolute
    assert relative_error(torch.zeros(3), ref) == math.inf
    assert math.isnan(relative_error(torch.tensor([math.nan, 4.0]), ref))
    # half precision is widened before subtracting
    assert relative_error(torch.tensor([3.0, 4.0], dtype=torch.bfloat16), ref.double()) == 0.0


def test_compare_passes_within_tolerance():
    outputs = {"output": REF["output"].float() * (1 + 1e-6), "grad_x": REF["grad_x"].float()}
    verdict = compare(outputs, REF, 1e-4)
    assert verdict.ok and verdict.message == "" and verdict.worst == "output"
    assert 0 < verdict.max_rel_error == pytest.approx(1e-6, rel=0.1)  # float32 rounding of 1 + 1e-6


def test_compare_fails_over_tolerance_and_names_the_worst():
    outputs = {"output": REF["output"] * 1.001, "grad_x": REF["grad_x"] * 1.01}
    verdict = compare(outputs, REF, 1e-3)
    assert not verdict.ok and verdict.worst == "grad_x"
    assert verdict.max_rel_error == pytest.approx(0.01)
    assert verdict.message.startswith("grad_x relative error 0.01 > tolerance 0.001")
    assert compare(outputs, REF, 0.02).ok


def test_compare_fails_on_nan_even_when_other_errors_are_larger():
    outputs = {"output": torch.tensor([math.nan, 4.0]), "grad_x": REF["grad_x"] * 2}
    verdict = compare(outputs, REF, 1e9)
    assert not verdict.ok and verdict.worst == "output" and math.isnan(verdict.max_rel_error)
    assert "nan" in verdict.message


def test_compare_fails_on_inf():
    outputs = {"output": torch.tensor([math.inf, 4.0]), "grad_x": REF["grad_x"]}
    assert not compare(outputs, REF, 1e9).ok


def test_compare_fails_on_missing_tensor():
    verdict = compare({"output": REF["output"]}, REF, 1.0)
    assert not verdict.ok and verdict.worst == "grad_x" and verdict.max_rel_error == math.inf
    assert verdict.message == "lane returned no grad_x"


def test_compare_fails_on_shape_mismatch():
    outputs = {"output": REF["output"], "grad_x": REF["grad_x"].T.reshape(4)}
    verdict = compare(outputs, REF, 1e9)
    assert not verdict.ok and verdict.worst == "grad_x" and verdict.max_rel_error == math.inf


def test_compare_ignores_extra_tensors():
    assert compare({**REF, "h_n": torch.full((2,), math.nan)}, REF, 0.0).ok


# --- a deliberately wrong lane is caught before it is timed -------------------------------------

def _perturb_weight_hh(module, weights):
    """Off by 1 % in the first layer's recurrent weights: a subtle conversion bug."""
    weights = dict(weights)
    weights["weight_hh_l0"] = weights["weight_hh_l0"] * 1.01
    load_state_dict(module, weights)


def _drop_bias_hh(module, weights):
    """Forgets the recurrent bias (as if a converter copied only one of the two biases)."""
    weights = {n: (torch.zeros_like(t) if n.startswith("bias_hh") else t) for n, t in weights.items()}
    load_state_dict(module, weights)


WRONG_LOADS = {"perturbed-weight_hh": _perturb_weight_hh, "dropped-bias_hh": _drop_bias_hh}


@pytest.mark.parametrize("mode", ["train", "forward"])
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("wrong", list(WRONG_LOADS))
def test_runner_records_mismatch_for_a_wrong_lane(wrong, cell, mode, temp_lane, tmp_path):
    lane = temp_lane(f"test-wrong-{wrong}", build_torch_nn, load=WRONG_LOADS[wrong])
    case = Case(cell=cell, batch_size=4, seq_len=8, input_size=16, hidden_size=16, mode=mode)
    out = ResultsFile(tmp_path / "r.jsonl")
    (row,) = runner.run([case], [lane], out, budget_s=0.01)
    assert row["status"] == "mismatch", row
    assert "us_per_example" not in row and "ms_per_batch" not in row
    assert row["max_rel_error"] > TOLERANCE["fp32"]
    assert "relative error" in row["message"] and "> tolerance" in row["message"]
    assert [r["status"] for r in read_records(out.path, "result")] == ["mismatch"]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_runner_records_mismatch_for_swapped_gates(cell, temp_lane, tmp_path):
    def swap(module, weights):
        weights = dict(weights)
        w = weights["weight_ih_l0"]
        h = w.shape[0] // len(GATES[cell])
        weights["weight_ih_l0"] = torch.cat([w[h:2 * h], w[:h], w[2 * h:]])
        load_state_dict(module, weights)

    lane = temp_lane(f"test-swap-{cell}", build_torch_nn, load=swap)
    case = Case(cell=cell, batch_size=3, seq_len=5, input_size=7, hidden_size=9, num_layers=2, mode="forward")
    rows = runner.run([case], [lane, LANES["torch-nn"]], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["mismatch", "ok"]
    assert rows[0]["max_rel_error"] > 100 * TOLERANCE["fp32"]
    assert rows[0]["message"].startswith(("output relative error", "h_n relative error", "c_n relative error"))
    assert "us_per_example" not in rows[0] and rows[1]["us_per_example"] > 0


def test_runner_records_mismatch_when_gradients_come_back_under_other_names(temp_lane, tmp_path):
    """A lane that forgets to map its parameter names to canonical ones returns no grad_weight_*."""
    from rnnbench.lanes.cell_loop import CellLoop, load_cells

    lane = temp_lane("test-unnamed", CellLoop, load=load_cells)  # default canonical_name: identity
    case = Case(cell="gru", batch_size=2, seq_len=3, input_size=4, hidden_size=5)
    (row,) = runner.run([case], [lane], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert row["status"] == "mismatch" and row["message"].startswith("lane returned no grad_")
    assert "us_per_example" not in row


# --- the final states and the gradients to the initial states are checked too -------------------


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; the gradient scaled by ``factor`` backward (a wrong backward path)."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class _Faulty(torch.nn.Module):
    """torch.nn's layer with one fault: ``h_n`` or ``c_n`` off by 10 %, or the gradient to the
    initial states or through the final states scaled, while the output is exactly right."""

    def __init__(self, fault, cell, input_size, hidden_size, num_layers):
        super().__init__()
        self.fault, self.rnn = fault, build_torch_nn(cell, input_size, hidden_size, num_layers)

    def forward(self, x, hx):
        lstm = isinstance(hx, tuple)
        if self.fault == "grad_h0":
            hx = (_ScaleGrad.apply(hx[0], 0.5), hx[1]) if lstm else _ScaleGrad.apply(hx, 0.5)
        if self.fault == "grad_c0":
            hx = (hx[0], _ScaleGrad.apply(hx[1], 0.5))
        output, h_n = self.rnn(x, hx)
        h, c = h_n if lstm else (h_n, None)
        if self.fault == "h_n":
            h = h * 1.1
        if self.fault == "c_n":
            c = c * 1.1
        if self.fault == "backward_through_h_n":
            h = _ScaleGrad.apply(h, 0.0)
        return output, ((h, c) if lstm else h)


FAULTS = {"h_n": ("forward", "train"), "c_n": ("forward", "train"), "grad_h0": ("train",),
          "grad_c0": ("train",), "backward_through_h_n": ("train",)}


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("fault, mode", [(f, m) for f, modes in FAULTS.items() for m in modes])
def test_runner_records_mismatch_for_wrong_final_states_or_state_gradients(fault, mode, cell, temp_lane, tmp_path):
    if fault in ("c_n", "grad_c0") and cell != "lstm":
        pytest.skip("only an LSTM has a cell state")
    lane = temp_lane(f"test-faulty-{fault}", lambda *a: _Faulty(fault, *a),
                     load=lambda m, w: m.rnn.load_state_dict(w), canonical_name=lambda n: n.removeprefix("rnn."))
    case = Case(cell=cell, batch_size=3, seq_len=7, input_size=5, hidden_size=9, num_layers=2, mode=mode)
    rows = runner.run([case], [lane, LANES["torch-nn"]], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
    assert [r["status"] for r in rows] == ["mismatch", "ok"], rows[0]
    # forward mode has only the faulty tensor to miss; in train mode a wrong state also moves
    # the loss, so a gradient may be the worst
    assert rows[0]["message"].startswith(fault if mode == "forward" else ("grad_", fault)), rows[0]["message"]
    assert "us_per_example" not in rows[0]
