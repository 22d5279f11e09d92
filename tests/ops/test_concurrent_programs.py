"""The multi-program kernels on the CPU: the interpreter's programs run side by side in threads
(``concurrent_programs`` in conftest.py), so hidden units split across programs exchange h_t
through memory and wait at the grid barrier as they do on the GPU. Output, final states and every
gradient against the float64 reference; the barrier self-check."""

from __future__ import annotations

import pytest
import torch

from rnnbench.precision import tolerance

from test_recurrence import CELLS, SPLIT_K_CELLS, check_layer, make_layer, padded_and_unpadded, run_layer

pytestmark = pytest.mark.usefixtures("concurrent_programs")


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("cell", CELLS)
def test_hidden_units_split_across_programs(cell, resident):
    """hidden 37 over 3 programs of 16 units (the last one partly masked), batch 20 over two
    batch blocks: 6 programs, two barrier counters."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_h=16, block_b=16, w_resident=resident, block_k=16):
        check_layer(cell, make_layer(cell, (20, 5, 4, 37)), "fp32", tolerance(cell, "fp32"))


@pytest.mark.parametrize("weights", ["resident", "streamed", "copy"])
@pytest.mark.parametrize("cell", CELLS)
def test_split_once_across_programs(cell, weights):
    """The forward with h split once (``Plan.split_once``) over 6 programs: each publishes h_t
    split, in two slots that the programs reuse every other step (h0's split passes a barrier of
    its own first), and splits its own rows of W_hh (resident; streamed, in the step; or into a
    copy it reads back, ``Plan.split_w_once``)."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_h=16, block_b=16, w_resident=weights == "resident", block_k=16, split_once=True,
                       split_w_once=weights == "copy"):
        check_layer(cell, make_layer(cell, (20, 5, 4, 37)), "fp32", tolerance(cell, "fp32"))


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("block_h, shape", [(16, (20, 5, 4, 37)), (4, (3, 4, 4, 37))], ids=["3x16-units", "10x4-units"])
@pytest.mark.parametrize("cell", SPLIT_K_CELLS)
def test_split_k_backward_sums_every_programs_partials(cell, block_h, shape, resident):
    """The split-K backward (``Plan.split_k``) over several programs: each writes a partial dh of
    every unit, and each sums its units' partials from all of them after the barrier (two batch
    blocks at batch 20; 10 programs of 4 units)."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_h=block_h, block_b=16, w_resident=resident, block_k=16, split_k=True):
        check_layer(cell, make_layer(cell, shape), "fp32", tolerance(cell, "fp32"))


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("cell", SPLIT_K_CELLS)
def test_split_k_padded_partials_give_the_same_bits(cell, resident, nan_buffers):
    """The split-K backward's partials with rows padded (``Plan.pad_rows``, asked for at hidden 37:
    rows 40 apart, stored and summed to unit 39) against rows ``H`` apart: the same products in
    the same order, so every tensor the layer returns is finite and bit for bit the unpadded one's,
    over 3 programs of 16 units and two batch blocks. Every float buffer starts as NaN: a padding
    summed before it is written shows."""
    from rnnbench.ops.recurrence import plan, recurrent_layer

    def check_plan(pad):
        backward = plan(cell, 20, 37, torch.float32, torch.device("cpu"), direction="backward")
        assert backward.split_k and backward.pad_rows == pad

    tensors = make_layer(cell, (20, 5, 4, 37))
    padded_and_unpadded(lambda: sum(run_layer(recurrent_layer, cell, tensors, torch.float32), []), check_plan,
                        "backward_pad_rows", block_h=16, block_b=16, w_resident=resident, block_k=16, split_k=True)


@pytest.mark.parametrize("block_h, shape", [(16, (20, 5, 4, 37)), (4, (3, 4, 4, 37))], ids=["3x16-units", "10x4-units"])
@pytest.mark.parametrize("cell", SPLIT_K_CELLS)
def test_gate_split_backward_sums_each_groups_partials(cell, block_h, shape):
    """The transpose backward with each gate's partial apart (``Plan.gate_split``): programs in
    groups of the cell's gates, each multiplying one gate's gradients of every unit for the group's
    units, the group summing after a barrier of its own. Hidden 37 in 3 units blocks of 16 (one
    group, the LSTM's with a fourth program that owns no unit) over two batch blocks, and in 10
    blocks of 4 (three groups of four, the last two programs unit-less; four groups of three)."""
    from rnnbench.ops.recurrence import NUM_GATES, plan, plan_override

    with plan_override(block_h=block_h, block_b=16, w_resident=False, block_k=16, gate_split=True):
        backward = plan(cell, shape[0], shape[3], torch.float32, torch.device("cpu"), direction="backward")
        assert backward.gate_split == NUM_GATES[cell] and backward.grid(shape[0], shape[3])[0] % NUM_GATES[cell] == 0
        check_layer(cell, make_layer(cell, shape), "fp32", tolerance(cell, "fp32"))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_small_tiles_streamed(cell):
    """4 hidden units per program (a 16-row stacked tile, the strict-fp32 plan on a GPU): hidden 37
    over 10 programs, each re-reading its weights in 16-wide chunks."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_h=4, w_resident=False, block_k=16):
        check_layer(cell, make_layer(cell, (3, 4, 4, 37)), "fp32", tolerance(cell, "fp32"))


@pytest.mark.parametrize("split_k", [False, True, "gate_split"], ids=["transpose", "split_k", "gate_split"])
@pytest.mark.parametrize("cell", CELLS)
def test_variable_lengths_across_programs(cell, split_k):
    """A variable-length batch over 6 programs (hidden 37 in 3 of 16 units, batch 20 in two blocks):
    finished rows' h goes through the exchange as zeros while each program keeps their state, and
    backward every program's gate gradients of a finished row are zero while its owner passes
    ``d_h`` through (summed from every program's partials with split-K)."""
    import torch

    from rnnbench.ops.recurrence import plan_override

    if split_k and cell not in SPLIT_K_CELLS:
        pytest.skip(f"no {split_k if split_k == 'gate_split' else 'split-K'} backward for {cell}")
    lengths = torch.tensor([5, 1, 0, 3, 5, 2, 4, 5, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 3])
    fields = dict(w_resident=False, gate_split=True) if split_k == "gate_split" else dict(split_k=split_k)
    with plan_override(block_h=16, block_b=16, block_k=16, **fields):
        check_layer(cell, make_layer(cell, (20, 5, 4, 37)), "fp32", tolerance(cell, "fp32"), lengths)


def test_counters_are_left_at_zero_and_reused(monkeypatch):
    """The kernels zero their barrier counters on the way out, so one buffer serves every launch
    (as on CUDA, where it is kept per device and stream): forward and backward, twice, over 3
    hidden programs and 2 batch blocks, with the buffer checked after each."""
    import torch

    from rnnbench.ops import recurrence
    from rnnbench.ops.recurrence import plan_override

    buf = torch.zeros(64, dtype=torch.int32)
    launches = []

    def shared(count, device):
        launches.append(count)
        assert not buf.any(), "a launch found its counters dirty"
        return buf, None  # no CUDA stream under the interpreter

    monkeypatch.setattr(recurrence, "_counters", shared)
    with plan_override(block_h=16, block_b=16):
        for seed in (0, 1):
            check_layer("lstm", make_layer("lstm", (20, 3, 4, 37), seed=seed), "fp32", tolerance("lstm", "fp32"))
    assert launches == [4] * 4 and not buf.any()  # two counters per batch block, two blocks
    launches.clear()  # the gate-split backward: a group counter per group too (one group a batch block)
    with plan_override(block_h=16, block_b=16, w_resident=False, block_k=16, gate_split=True):
        for seed in (0, 1):
            check_layer("gru", make_layer("gru", (20, 3, 4, 37), seed=seed), "fp32", tolerance("gru", "fp32"))
    assert launches == [4, 6] * 2 and not buf.any()


def test_barrier_orders_threads():
    from rnnbench.ops.floor import barrier_check, barrier_floor

    assert barrier_floor(4, 6, "cpu").item() == 24
    assert barrier_check(4, 6, "cpu") == 0


@pytest.mark.parametrize("cell, resident", [("lstm", True), ("gru", False), ("rnn_tanh", False)],
                         ids=["lstm-resident", "gru-streamed", "rnn_tanh-streamed"])
def test_layer_norm_across_programs(cell, resident):
    """Layer norm's forward on an exchange plan (``recurrence.LAYER_NORM_EXCHANGE_PLAN``): hidden 37
    over 3 programs of 16 units, batch 20 over two batch blocks, each program publishing its share
    of its rows' sums and reading everyone's after a grid barrier (the products' norms, and the
    LSTM's cell norm after one more); output and final states against float64, one layer, then two
    both ways with variable lengths."""
    from rnnbench.ops.recurrence import plan_override

    from test_layer_norm import check

    with plan_override(h_on_chip=False, block_h=16, block_b=16, block_k=16, w_resident=resident):
        assert not check(cell, "triton", 20, 5, 4, 37, gradients=False)
        assert not check(cell, "triton", 20, 5, 4, 37, gradients=False, num_layers=2, bidirectional=True,
                         lengths=torch.arange(20) % 6)


@pytest.mark.parametrize("cell, resident", [("lstm", False), ("gru", True), ("rnn_relu", False)],
                         ids=["lstm-streamed", "gru-resident", "rnn_relu-streamed"])
def test_layer_norm_trains_across_programs(cell, resident):
    """Layer norm's training on the exchange plans (the transpose backward): each reverse step
    gathers every program's share of its rows' sums for each norm's backward (the LSTM's cell
    statistics, its cell norm's backward, the product's) after a grid barrier, before the exchange
    of the product's gradient; output, final states and every gradient against float64, one layer
    with lengths, as above."""
    from rnnbench.ops.recurrence import plan_override

    from test_layer_norm import check

    with plan_override(h_on_chip=False, block_h=16, block_b=16, block_k=16, w_resident=resident):
        assert not check(cell, "triton", 20, 5, 4, 37, lengths=torch.arange(20) % 6)
