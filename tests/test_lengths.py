"""Variable-length batches: lengths drawn per sequence, the masked float64 reference, and every
lane that can take them verified on valid positions and each sequence's own final state."""

from __future__ import annotations

import pytest
import torch

from rnnbench import runner
from rnnbench.cases import Case
from rnnbench.errors import UsageError
from rnnbench.lanes import LANES
from rnnbench.lanes.torch_nn import build_torch_nn
from rnnbench.precision import TOLERANCE
from rnnbench.reference import reference_forward
from rnnbench.results import ResultsFile
from rnnbench.verify import compare
from rnnbench.workload import expected_names, lane_step, make_inputs, reference_step, valid_only

# Lanes that take variable-length batches and run on this CPU, from the registry.
LENGTH_LANES = [name for name, lane in LANES.items() if lane.lengths and lane.unavailable("cpu") is None]


def _case(cell="lstm", **fields):
    sizes = dict(batch_size=5, seq_len=9, input_size=7, hidden_size=11, num_layers=2, lengths="1:9")
    return Case(cell=cell, **{**sizes, **fields})


def test_case_validates_and_names_lengths():
    assert _case().key.endswith("-len1:9") and _case(sort_lengths=True).key.endswith("-len1:9s")
    assert _case().length_range == (1, 9) and Case().length_range is None
    for bad in ("0:5", "3:10", "5:3", "abc", "4"):
        with pytest.raises(UsageError, match="lengths"):
            _case(lengths=bad)
    with pytest.raises(UsageError, match="sort_lengths goes with lengths"):
        Case(sort_lengths=True)


def test_lengths_are_drawn_in_range_sorted_on_request_and_shared():
    unsorted, sorted_ = make_inputs(_case(lengths="3:8", batch_size=40)), make_inputs(_case(lengths="3:8", batch_size=40, sort_lengths=True))
    assert unsorted.lengths.min() >= 3 and unsorted.lengths.max() <= 8 and len(set(unsorted.lengths.tolist())) > 2
    assert sorted_.lengths.tolist() == sorted(unsorted.lengths.tolist(), reverse=True)
    assert torch.equal(unsorted.x, sorted_.x)
    assert unsorted.useful_timesteps == int(unsorted.lengths.sum()) < 40 * 9
    assert make_inputs(Case()).lengths is None and make_inputs(Case()).useful_timesteps == 30 * 32


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_masked_reference_is_each_sequence_run_alone(cell):
    case = _case(cell)
    inputs = make_inputs(case)
    w = {n: t.double() for n, t in inputs.weights.items()}
    x, h0, c0 = inputs.x.double(), inputs.h0.double(), inputs.c0.double()
    hx = (h0, c0) if cell == "lstm" else h0
    output, h_n = reference_forward(cell, w, x, hx, case.num_layers, inputs.lengths)
    for b, n in enumerate(inputs.lengths.tolist()):
        alone_hx = (h0[:, b:b + 1], c0[:, b:b + 1]) if cell == "lstm" else h0[:, b:b + 1]
        alone_out, alone_h = reference_forward(cell, w, x[:n, b:b + 1], alone_hx, case.num_layers)
        torch.testing.assert_close(output[:n, b:b + 1], alone_out)
        assert torch.count_nonzero(output[n:, b]) == 0  # past its end: zeros
        for got, want in zip(h_n if cell == "lstm" else (h_n,), alone_h if cell == "lstm" else (alone_h,)):
            torch.testing.assert_close(got[:, b:b + 1], want)


@pytest.mark.parametrize("sort_lengths", [False, True], ids=["unsorted", "sorted"])
@pytest.mark.parametrize("mode", ["train", "forward"])
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_relu"])
@pytest.mark.parametrize("lane", LENGTH_LANES)
def test_every_length_lane_matches_the_reference(lane, cell, mode, sort_lengths):
    case = _case(cell, mode=mode, sort_lengths=sort_lengths, batch_size=3, seq_len=7, lengths="1:7")
    inputs = make_inputs(case)
    final_states = LANES[lane].final_states(case)
    reference = reference_step(case, inputs, final_states)
    outputs, _ = lane_step(LANES[lane], case, inputs).first_call()
    assert tuple(outputs) == tuple(reference) == expected_names(case, final_states)
    verdict = compare(valid_only(outputs, inputs), reference, TOLERANCE["fp32"])
    assert verdict.ok, verdict.message


def test_only_the_padded_lane_leaves_out_final_states():
    case = _case()
    assert [n for n in LENGTH_LANES if not LANES[n].final_states(case)] == ["torch-nn-padded"]
    assert LANES["torch-nn-padded"].final_states(Case())  # full length: nothing to leave out
    assert LANES["torch-nn-padded"].skip_reason(Case()) == "measures variable-length batches only (--lengths)"
    assert LANES["torch-nn-graph"].skip_reason(_case(device="cuda")) in ("no variable-length support",)


def test_a_lane_that_ignores_the_lengths_is_a_mismatch(temp_lane, tmp_path):
    """A module that says it masks but runs every sequence to seq_len: outputs at valid positions
    are right (padding comes after them), the final states are not."""
    lane = temp_lane("test-ignores-lengths", lambda *a: _IgnoresLengths(build_torch_nn(*a)),
                     load=lambda m, w: m.rnn.load_state_dict(w), canonical_name=lambda n: n.removeprefix("rnn."),
                     lengths="masked")
    for mode in ("forward", "train"):
        rows = runner.run([_case(mode=mode)], [lane, LANES["torch-nn"]], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.01)
        assert [r["status"] for r in rows] == ["mismatch", "ok"], rows[0]
    assert rows[0]["message"].startswith(("h_n", "c_n", "grad_"))


class _IgnoresLengths(torch.nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, hx, lengths=None):
        return self.rnn(x, hx)


def test_rows_report_useful_timesteps(tmp_path):
    case = _case(mode="forward", batch_size=6)
    rows = runner.run([case], [LANES["torch-nn"], LANES["torch-nn-padded"]], ResultsFile(tmp_path / "r.jsonl"),
                      budget_s=0.01)
    useful = make_inputs(case).useful_timesteps
    for row in rows:
        assert row["status"] == "ok", row
        assert row["useful_timesteps_per_s"] == pytest.approx(useful / (row["ms_per_batch"] / 1e3))
        assert row["useful_timesteps_per_s"] < row["timesteps_per_s"]


def test_cli_lengths(monkeypatch, capsys):
    from cli_helpers import assert_one_line_error, run_main

    proc = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--cell", "lstm", "--seq-len", "50",
                    "--lengths", "10:50", "--sort-lengths", "--mode", "train")
    assert proc.returncode == 0 and proc.stdout.splitlines()[0].endswith("-len10:50s")
    assert_one_line_error(run_main(monkeypatch, capsys, "run", "--dry-run", "--seq-len", "50", "--lengths", "10:60"),
                          "within 1:50")
    assert_one_line_error(run_main(monkeypatch, capsys, "run", "--dry-run", "--sort-lengths"), "--sort-lengths goes with")


def test_report_shows_lengths_and_useful_steps(tmp_path):
    from rnnbench.report import markdown
    from rnnbench.results import load_results

    path = tmp_path / "r.jsonl"
    cases = [_case(mode="forward", batch_size=6, sort_lengths=s) for s in (False, True)] + [Case(batch_size=2, seq_len=3, input_size=4, hidden_size=5, mode="forward")]
    runner.run(cases, [LANES["torch-nn"], LANES["torch-nn-padded"]], ResultsFile(path), budget_s=0.01)
    text = markdown(load_results(path))
    assert "lengths 1:9 unsorted" in text and "lengths 1:9 sorted" in text  # separate tables
    assert text.count("forward useful steps/s") == 2  # only the variable-length tables
    assert "| lstm   | torch-nn-padded |" in text
