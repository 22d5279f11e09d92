"""The LSTM's and GRU's TF32 forward on fp16 operands (``Plan.half_operands``), on CPU tensors under
Triton's interpreter: the weights' rows and h rounded to fp16 under power-of-two scales, fp16
products (exact in fp32 here, as on tensor cores), everything else fp32. Output, final states and
every gradient against the float64 reference, at TF32's tolerance; weights and initial states
far outside fp16's range, which only the scales keep; the plan's rule for an H100."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rnnbench.precision import tolerance

from test_recurrence import LENGTHS, SHAPES, _id, check_layer, make_layer, padded_and_unpadded, run_layer

CELLS = ("lstm", "gru")  # (the RNN's h under relu is unbounded: no half operands)
# resident in one piece, resident in 16-column pieces, streamed from the program's fp16 copy, each
# with the copy's and h's fp16 rows padded where hidden is not a multiple of 8 (the default,
# Plan.pad_rows: at hidden 37 and 100, rows 40 and 104 apart); the last two unpadded
PLANS = {"resident": {}, "pieces": {"block_k": 16}, "streamed": {"w_resident": False, "block_k": 16},
         "pieces_unpadded": {"block_k": 16, "pad_rows": False},
         "streamed_unpadded": {"w_resident": False, "block_k": 16, "pad_rows": False}}


def _check(cell, tensors, plan_fields, lengths=None):
    from rnnbench.ops.recurrence import plan, plan_override

    from rnnbench.ops.plans import row_stride

    b, h = tensors[0].shape[1], tensors[4].shape[1]
    with plan_override(half_operands=True, **plan_fields):
        p = plan(cell, b, h, torch.float32, torch.device("cpu"))
        assert p.half_operands and p.pad_rows == plan_fields.get("pad_rows", h % 8 != 0)
        assert (row_stride(p, h) > h) == (p.pad_rows and h % 8 != 0)  # (a padded row where H is not 16 bytes)
        check_layer(cell, tensors, "fp32", tolerance(cell, "tf32"), lengths)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("cell, shape", [pytest.param(c, s, id=_id(c, s)) for c in CELLS for s in SHAPES])
def test_half_operands_match_reference(cell, shape, plan_name):
    _check(cell, make_layer(cell, shape), PLANS[plan_name])


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("cell", CELLS)
def test_half_operands_with_variable_lengths(cell, plan_name):
    """Each sequence its own length (4, 7 and 0 steps): a finished row publishes zeros in fp16 and
    keeps its own state, as on every plan."""
    _check(cell, make_layer(cell, (3, 7, 5, 37)), PLANS[plan_name], LENGTHS)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("cell", CELLS)
def test_weights_far_outside_fp16s_range(cell, plan_name):
    """W_hh times 2^20 (past fp16's largest, 65504) with h0 times 2^-20, and times 2^-30 (below fp16's
    smallest subnormal, 2^-24): one step from h0 alone (no input term, no bias), so the
    recurrent product is the output's whole signal (c0 zero). Unscaled, the first overflows and the second
    rounds to zero."""
    for w_scale, h_scale in ((2.0 ** 20, 2.0 ** -20), (2.0 ** -30, 1.0)):
        x, h0, c0, w_ih, w_hh, _, _ = make_layer(cell, (3, 1, 5, 37))
        c0 = None if c0 is None else c0 * 0
        _check(cell, [x * 0, h0 * h_scale, c0, w_ih, w_hh * w_scale, None, None], PLANS[plan_name])


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("cell", CELLS)
def test_initial_states_past_fp16s_range(cell, plan_name):
    """h0 of one batch row at 2^20 (past fp16's 65504; W_hh times 2^-20, so that step 0 does not
    saturate), another's at 2^-12, the third's as drawn: h is divided by a power of two before its
    rounding (the GRU carries the large row's h on for every step)."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = make_layer(cell, (3, 5, 5, 37))
    h0 = h0 * torch.tensor([2.0 ** 20, 2.0 ** -12, 1.0])[:, None]
    _check(cell, [x, h0, c0, w_ih, w_hh * 2.0 ** -20, b_ih, b_hh], PLANS[plan_name])


@pytest.mark.usefixtures("concurrent_programs")
@pytest.mark.parametrize("pad_rows", [False, True], ids=["rows_h", "rows_padded"])  # (asked either way)
@pytest.mark.parametrize("weights", ["resident", "streamed"])
@pytest.mark.parametrize("cell", CELLS)
def test_half_operands_across_programs(cell, weights, pad_rows):
    """Over 6 programs (hidden 37 in 3 unit blocks, batch 20 in two batch blocks): each rounds its
    own rows of W_hh (into its rows of the shared fp16 copy when streamed), publishes h_t in fp16
    in two slots reused every other step, and h0's pass a barrier of their own first; h0 of one
    row past fp16's range. ``pad_rows``: the copy's and h's fp16 rows 40 apart (Plan.pad_rows)."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = make_layer(cell, (20, 5, 4, 37))
    h0[7] *= 2.0 ** 20
    _check(cell, [x, h0, c0, w_ih, w_hh, b_ih, b_hh],
           dict(block_h=16, block_b=16, w_resident=weights == "resident", block_k=16, pad_rows=pad_rows))


def test_tf32_forwards_that_exchange_h_take_half_operands():
    """Planned for an H100: the LSTM's and GRU's TF32 forwards that exchange h past hidden 128
    (their fp32 weights resident, or streamed at hidden 1024 and at 768 past batch 128) take fp16
    operands on fp16's plan (its tiles, residency and warps; never Gluon); nothing else does (hidden
    128 and below, whatever the plan there: FMA units, on chip, or the exchange where Gluon is
    missing; strict fp32, 16-bit weights, the RNN, any backward, a TF32 weight path or 3xTF32
    split asked for). Asked for where it cannot run, refused."""
    from rnnbench.ops.plans import choose_plan, split_once_level

    cuda = torch.device("cuda")

    def plan(batch, hidden, gates, dtype=torch.float32, precision="tf32", direction="forward", **override):
        return choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132, precision=precision,
                           direction=direction, **override)

    for batch, hidden in ((128, 1024), (32, 1024), (16, 1024), (256, 768), (128, 768), (128, 512), (16, 768),
                          (1, 136), (20, 500), (100, 200)):
        for gates in (4, 3):
            p = plan(batch, hidden, gates)
            assert p.half_operands and split_once_level(p) == 3, (batch, hidden, gates)
            assert p.pad_rows == (hidden % 8 != 0)
            fp16 = plan(batch, hidden, gates, torch.float16, "ieee", gluon=False)
            assert dataclasses.replace(p, half_operands=False) == fp16  # (both pad unaligned rows)
            assert not plan(batch, hidden, gates, direction="backward").half_operands
            assert not plan(batch, hidden, gates, precision="tf32x3").half_operands
            assert not plan(batch, hidden, gates, torch.bfloat16, "ieee").half_operands
            for asked in (dict(w_resident=False), dict(w_resident=True), dict(half_operands=False)):
                assert not plan(batch, hidden, gates, **asked).half_operands, (batch, hidden, gates, asked)
    assert not plan(128, 1024, 1).half_operands  # the RNN
    for batch, hidden in ((20, 100), (32, 128), (128, 128), (256, 128), (1, 37)):  # FMA, on chip, or not measured
        for gates in (4, 3):
            assert not plan(batch, hidden, gates).half_operands, (batch, hidden, gates)
    assert plan(20, 100, 4, h_on_chip=False, half_operands=True).half_operands  # exchanging h, asked for
    for bad in (dict(gates=1), dict(dtype=torch.bfloat16, precision="ieee"), dict(precision="tf32x3"),
                dict(h_on_chip=True), dict(gluon=True)):
        args = {"gates": 4, **bad}
        with pytest.raises(ValueError, match="half_operands|gluon"):
            plan(128, 1024, args.pop("gates"), half_operands=True, **args)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("plan_name", ["pieces", "streamed"])
@pytest.mark.parametrize("cell", CELLS)
def test_padded_rows_give_the_same_bits(cell, plan_name, nan_buffers):
    """``Plan.pad_rows`` moves the fp16 rows' addresses and reads each row up to its padded end,
    not a value or the order of a sum: the output, final states and every gradient are bit for bit
    the unpadded forward's (hidden 37: rows 40 apart). Every float buffer the layer allocates
    starts as NaN, so a padding the kernel reads before writing it as zeros shows as NaN."""
    from rnnbench.ops.recurrence import recurrent_layer

    tensors = make_layer(cell, (3, 7, 5, 37))
    padded_and_unpadded(lambda: sum(run_layer(recurrent_layer, cell, tensors, torch.float32), []),
                        half_operands=True, **PLANS[plan_name])


def test_pad_rows_goes_with_half_operands():
    """``Plan.pad_rows``: a TF32 forward on fp16 operands pads its own fp16 rows to 16 bytes where
    hidden is not a multiple of 8 (``row_stride``: 650 -> 656), by default or asked; not at 640, or
    asked not to, or (refused asked for) with fewer than 8 units a program; the backward's plan
    ignores it (a forward's field: the split-K backward has a rule of its own); 3xTF32 and TF32's
    own operands refuse it (16-bit weights: test_padded_rows.py)."""
    from rnnbench.ops.plans import choose_plan, row_stride

    cuda = torch.device("cuda")

    def plan(hidden, dtype=torch.float32, precision="tf32", direction="forward", **override):
        return choose_plan(128, hidden, 4, dtype, cuda, multiprocessors=132, precision=precision,
                           direction=direction, **override)

    assert not plan(640).pad_rows and row_stride(plan(640), 640) == 640
    for asked in ({}, dict(pad_rows=True), dict(forward_pad_rows=True)):
        p = plan(650, **asked)
        assert p.half_operands and p.pad_rows and row_stride(p, 650) == 656
        # (nothing else of the plan moves)
        assert dataclasses.replace(p, pad_rows=False) == plan(650, forward_pad_rows=False) == plan(650, pad_rows=False)
        assert row_stride(plan(640, **asked), 640) == 640
        assert row_stride(plan(650, forward_pad_rows=False), 650) == 650
        assert plan(650, direction="backward", **asked) == plan(650, direction="backward")  # (its own rule)
    # (hidden 300 in 75 programs of 4 units: no program's units reach 300-303)
    narrow = dict(block_h=4, block_b=16)
    assert not choose_plan(16, 300, 4, torch.float32, cuda, 132, "tf32", **narrow).pad_rows
    with pytest.raises(ValueError, match="multiple of 8 units"):
        choose_plan(16, 300, 4, torch.float32, cuda, 132, "tf32", pad_rows=True, **narrow)
    for bad in (dict(precision="tf32x3"), dict(half_operands=False)):  # (16-bit weights: test_padded_rows.py)
        with pytest.raises(ValueError, match="pad_rows"):
            plan(650, pad_rows=True, **bad)

