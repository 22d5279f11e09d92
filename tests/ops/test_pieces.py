"""The LSTM's and GRU's streamed forward with its step in slices of units (``Plan.pieces``,
``ops/<cell>/pieces.py``). On CPU tensors under Triton's interpreter, every float buffer starting
as NaN: output, final states and every gradient against the float64 reference, in one program and
in six, with and without initial states and lengths, saving for the backward and not, and bit for
bit the whole tile's; the plan refuses it outside their streamed exchange forward; and, compiled
for sm_90, the registers it is for."""

from __future__ import annotations

import json

import pytest
import torch

from rnnbench.precision import tolerance

from test_recurrence import DTYPES, LENGTHS, check_layer, make_layer, run_layer, uninterpreted

# the exchange plan with streamed weights (the interpreter's default is on chip)
STREAMED = {"h_on_chip": False, "w_resident": False, "block_k": 16}
CELLS = ("lstm", "gru")  # (the cells with a forward in slices)


def _layer(cell, tensors, dtype, pieces, lengths=None, grad=True):
    """The layer's (output, h_n, c_n) with ``pieces`` slices, recording a backward or not."""
    from rnnbench.ops.recurrence import plan_override, recurrent_layer

    with plan_override(**STREAMED, forward_pieces=pieces), torch.set_grad_enabled(grad):
        return recurrent_layer(cell, *[None if t is None else t.to(DTYPES[dtype]) for t in tensors],
                               lengths=lengths)


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("pieces", [2, 4])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("cell", CELLS)
def test_slices_match_the_reference(cell, dtype, pieces):
    """Hidden 37 (64 units a program: slices of 32 and 16, the last partly masked), batch 3, 7
    steps, input 5, with initial states: every output and gradient within the dtype's tolerance."""
    from rnnbench.ops.recurrence import plan, plan_override

    with plan_override(**STREAMED, forward_pieces=pieces):
        assert plan(cell, 3, 37, DTYPES[dtype], torch.device("cpu")).pieces == pieces
        check_layer(cell, make_layer(cell, (3, 7, 5, 37)), dtype, tolerance(cell, dtype))


def _whole_and_sliced(cell, tensors, lengths=None, field="forward_pieces", **fields) -> list:
    """The layer's outputs and gradients in one tile, then in 4 slices (``field``: the forward's,
    the backward's): finite, and bit for bit the same (slicing moves no sum: the same chunks of h
    and rows of W_hh, in the same order). Returns the sliced form's."""
    from rnnbench.ops.recurrence import plan_override, recurrent_layer

    got = []
    for pieces in (1, 4):
        with plan_override(**STREAMED, **fields, **{field: pieces}):
            out, grads = run_layer(recurrent_layer, cell, tensors, torch.float32, lengths=lengths)
            got.append(out + grads)
    assert all(torch.isfinite(t).all() for t in got[1])
    assert len(got[1]) >= 3 and all(torch.equal(a, b) for a, b in zip(*got))
    return got[1]


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("cell", CELLS)
def test_slices_give_the_whole_tiles_outputs_without_initial_states_and_with_lengths(cell):
    """No initial states (step 0 reads no row); lengths 4, 7, 0 (a finished row keeps its state
    and publishes zeros, a row of none keeps its initial states), also against the float64
    reference."""
    from rnnbench.ops.recurrence import plan_override

    x, h0, c0, *weights = make_layer(cell, (3, 7, 5, 37))
    _whole_and_sliced(cell, [x, None, None, *weights])
    _whole_and_sliced(cell, [x, h0, c0, *weights], LENGTHS)
    with plan_override(**STREAMED, forward_pieces=2):
        check_layer(cell, [x, h0, c0, *weights], "fp32", tolerance(cell, "fp32"), LENGTHS)


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("cell", CELLS)
def test_a_forward_without_backward_gives_the_saving_forwards_outputs(cell, lengths):
    """Recording no backward (the LSTM's cell states in a scratch of two slots instead of the
    saved ``c_buf``; nothing saved): the same outputs and final states, bit for bit."""
    leaves = [None if t is None else t.requires_grad_() for t in make_layer(cell, (3, 7, 5, 37))]
    saving = [t for t in _layer(cell, leaves, "fp32", 2, lengths) if t is not None]
    assert saving[0].grad_fn is not None and len(saving) == (3 if cell == "lstm" else 2)
    for a, b in zip(saving, _layer(cell, leaves, "fp32", 2, lengths, grad=False)):
        assert torch.isfinite(b).all() and torch.equal(a.detach(), b)


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("half_saved", [True, False], ids=["16-bit-saved", "fp32-saved"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_16bit_slices_save_their_gates_in_the_weights_dtype(cell, dtype, half_saved):
    """A 16-bit forward in slices saves its gate activations in the weights' dtype by default
    (``Plan.half_saved``; fp32 when asked), the LSTM's cell states in fp32 either way, and the
    backward reading them gives every output and gradient within the dtype's tolerance of float64
    (hidden 37, batch 3, 7 steps, initial states, lengths)."""
    from rnnbench.ops.recurrence import plan_override, recurrent_layer

    tensors = [None if t is None else t.to(DTYPES[dtype]) for t in make_layer(cell, (3, 7, 5, 37))]
    asked = {} if half_saved else {"forward_half_saved": False}
    with plan_override(**STREAMED, forward_pieces=2, **asked):
        out = recurrent_layer(cell, *[None if t is None else t.detach().requires_grad_() for t in tensors],
                              lengths=LENGTHS)[0]
        x, w_ih, w_hh, h_buf, saved, c_buf = out.grad_fn.saved_tensors
        assert saved.dtype == (DTYPES[dtype] if half_saved else torch.float32), saved.dtype
        assert saved.shape == (7, 3, 4 * 37) and (c_buf is None) == (cell == "gru")
        assert cell == "gru" or c_buf.dtype == torch.float32
        check_layer(cell, tensors, dtype, tolerance(cell, dtype), LENGTHS)


@pytest.mark.parametrize("cell, dtype, precision, batch, hidden, half_saved", [
    ("lstm", torch.bfloat16, "ieee", 1024, 2048, True),  # (2 slices at 128 rows)
    ("gru", torch.float16, "ieee", 512, 4096, True),
    ("lstm", torch.bfloat16, "ieee", 320, 4096, True),  # (4 slices at 64 rows: PIECES_FROM)
    ("lstm", torch.bfloat16, "ieee", 256, 2048, False),  # (the whole tile)
    ("gru", torch.bfloat16, "ieee", 320, 4096, False),  # (the GRU's whole at 64 rows)
    ("lstm", torch.float32, "tf32", 1024, 2048, False),  # (in slices, but fp32 weights)
])
def test_half_saved_by_default_in_16bit_slices(cell, dtype, precision, batch, hidden, half_saved):
    """Planned for an H100: the forward saves 16-bit gates where it runs in slices with 16-bit weights,
    and only there; a backward plan never has the field."""
    from rnnbench.ops.plans import choose_plan

    plans = [choose_plan(batch, hidden, {"lstm": 4, "gru": 3}[cell], dtype, torch.device("cuda"), multiprocessors=132,
                         precision=precision, direction=direction) for direction in ("forward", "backward")]
    assert (plans[0].half_saved, plans[1].half_saved) == (half_saved, False), plans


@pytest.mark.parametrize("dtype, direction, fields", [
    (torch.float32, "forward", {"pieces": 2}),  # (fp32 weights)
    (torch.bfloat16, "forward", {"pieces": 1}),  # (the whole tile)
    (torch.bfloat16, "backward", {"pieces": 2}),  # (the backward reads what the forward saved)
], ids=["fp32", "whole-tile", "backward"])
def test_the_plan_refuses_half_saved_outside_16bit_slices(dtype, direction, fields):
    from rnnbench.ops.plans import choose_plan

    with pytest.raises(ValueError, match="half_saved is the LSTM's and GRU's forward in slices"):
        choose_plan(1024, 2048, 4, dtype, torch.device("cuda"), multiprocessors=132, direction=direction,
                    precision="tf32" if dtype == torch.float32 else "ieee", half_saved=True, **fields)


@pytest.mark.usefixtures("concurrent_programs", "nan_buffers")
@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("cell", CELLS)
def test_slices_across_programs(cell, lengths):
    """Over 6 programs (hidden 37 in 3 unit blocks of 16, in slices of 8; batch 20 in two batch
    blocks): each stores its slices' h_t while its later slices still read h_{t-1}, and arrives
    once."""
    from rnnbench.ops.recurrence import plan_override

    tensors = make_layer(cell, (20, 5, 4, 37))
    rows = None if lengths is None else torch.arange(20) % 6
    with plan_override(block_h=16, block_b=16, **STREAMED, forward_pieces=2):
        check_layer(cell, tensors, "fp32", tolerance(cell, "fp32"), rows)


@pytest.mark.usefixtures("concurrent_programs", "nan_buffers")
@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("cell", CELLS)
def test_slices_at_128_rows_with_a_ragged_last_block(cell, lengths):
    """128 batch rows a program (``plans.WIDE_ROWS``, the wide forward's default on CUDA; here the
    backward too) over 6 programs: batch 130 in two batch blocks, the second 2 rows and 126 masked
    (a batch the rule may take unaligned: 200 at hidden 4096), hidden 37 in 3 unit blocks of 16, in
    2 slices; every output and gradient against float64."""
    from rnnbench.ops.recurrence import plan, plan_override

    tensors = make_layer(cell, (130, 4, 3, 37))
    rows = torch.arange(130) % 5 if lengths else None
    with plan_override(block_h=16, block_b=128, **STREAMED, pieces=2):
        for direction in ("forward", "backward"):
            assert plan(cell, 130, 37, torch.float32, torch.device("cpu"), direction=direction).grid(130, 37) == (3, 2)
        check_layer(cell, tensors, "fp32", tolerance(cell, "fp32"), rows)


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("gate_split", [False, True], ids=["transpose", "gate-split"])
@pytest.mark.parametrize("pieces", [2, 4])
@pytest.mark.parametrize("cell", CELLS)
def test_the_backward_in_slices_matches_the_reference(cell, pieces, gate_split):
    """The reverse recurrence with its cell gradients in slices (hidden 37, 64 units a program;
    batch 3, 7 steps), the product of the whole tile after the barrier as one product or in gate
    partials: every gradient within fp32's tolerance of float64."""
    from rnnbench.ops.recurrence import plan, plan_override

    with plan_override(**STREAMED, backward_pieces=pieces, backward_gate_split=gate_split):
        got = plan(cell, 3, 37, torch.float32, torch.device("cpu"), direction="backward")
        assert (got.pieces, bool(got.gate_split), got.split_k) == (pieces, gate_split, False)
        check_layer(cell, make_layer(cell, (3, 7, 5, 37)), "fp32", tolerance(cell, "fp32"))


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("gate_split", [False, True], ids=["transpose", "gate-split"])
@pytest.mark.parametrize("cell", CELLS)
def test_the_backward_in_slices_gives_the_whole_tiles_gradients(cell, gate_split):
    """Bit for bit the whole tile's gradients: without initial states (no gradient reaching the
    final states but the output's), and with lengths 4, 7, 0 (a finished row's gradients pass
    through unchanged; a row of none hands its final states' gradients to its initial states)."""
    x, h0, c0, *weights = make_layer(cell, (3, 7, 5, 37))
    for tensors, lengths in (([x, None, None, *weights], None), ([x, h0, c0, *weights], LENGTHS)):
        _whole_and_sliced(cell, tensors, lengths, "backward_pieces", backward_gate_split=gate_split)


@pytest.mark.usefixtures("concurrent_programs", "nan_buffers")
@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("cell", CELLS)
def test_the_backward_in_slices_across_programs(cell, lengths):
    """Over 6 programs (hidden 37 in 3 unit blocks of 16, in slices of 8; batch 20 in two batch
    blocks): each publishes its slices' gate gradients with one arrival, and multiplies every
    program's after the barrier."""
    from rnnbench.ops.recurrence import plan_override

    tensors = make_layer(cell, (20, 5, 4, 37))
    rows = None if lengths is None else torch.arange(20) % 6
    with plan_override(block_h=16, block_b=16, **STREAMED, backward_pieces=2):
        check_layer(cell, tensors, "fp32", tolerance(cell, "fp32"), rows)


@pytest.mark.parametrize("cell, fields", [
    ("rnn", {"forward_pieces": 2}),  # (not the LSTM or GRU)
    ("rnn", {"pieces": 2}),  # (the backward's plan: the LSTM's and GRU's alone)
    ("gru", {"pieces": 2, "split_k": True}),  # (the backward on the forward's split)
    ("lstm", {"forward_pieces": 2, "w_resident": True}),  # (resident weights)
    ("lstm", {"forward_pieces": 3}),  # (not a power of 2)
    ("lstm", {"forward_pieces": 32, "block_h": 64}),  # (slices of 2 units)
], ids=["rnn", "rnn-backward", "split-k-backward", "resident", "three", "too-narrow"])
def test_the_plan_refuses_slices_where_no_kernel_takes_them(cell, fields):
    from rnnbench.ops.plans import choose_plan

    direction = "backward" if "pieces" in fields else "forward"
    asked = {k.removeprefix("forward_"): v for k, v in fields.items()}
    with pytest.raises(ValueError, match="pieces is the LSTM's and GRU's forward with streamed weights .* and "
                                         "their streamed transpose backward"):
        choose_plan(256, 1024, {"lstm": 4, "gru": 3, "rnn": 1}[cell], torch.bfloat16, torch.device("cuda"),
                    multiprocessors=132, direction=direction, block_k=64, **({"w_resident": False} | asked))


@pytest.mark.parametrize("cell, dtype, precision, batch, hidden, forward, backward", [
    ("lstm", torch.bfloat16, "ieee", 1024, 2048, (2, 128), (4, 128)),  # (128 rows, 128 units each way)
    ("lstm", torch.float16, "ieee", 512, 4096, (2, 128), (4, 128)),
    ("lstm", torch.bfloat16, "ieee", 1024, 1024, (2, 128), (2, 64)),  # (backward tiles 32: 64 rows)
    ("lstm", torch.bfloat16, "ieee", 256, 4096, (2, 128), (2, 64)),
    ("lstm", torch.bfloat16, "ieee", 256, 2048, (1, 64), (1, 64)),  # (64 values; tiles 16)
    ("lstm", torch.bfloat16, "ieee", 320, 2048, (1, 64), (2, 64)),  # (128 rows would take 96 programs for 80)
    ("lstm", torch.bfloat16, "ieee", 320, 4096, (4, 64), (4, 64)),  # (too: its 64-row tile in slices, PIECES_FROM)
    ("lstm", torch.float32, "tf32", 1024, 650, (1, 64), (1, 64)),  # (tiles 32, but below hidden 1024: split-K)
    ("lstm", torch.float32, "tf32", 1024, 2048, (2, 128), (4, 128)),  # (its own fp32 operands, not fp16's)
    ("lstm", torch.float32, "tf32", 320, 4096, (2, 64), (4, 64)),  # (its own at 64 rows: PIECE_ACCUMULATOR_TF32)
    ("lstm", torch.float32, "tf32", 512, 4096, (2, 128), (4, 128)),
    ("lstm", torch.float32, "tf32", 1024, 1024, (1, 64), (2, 64)),  # (128: fp16 operands, whole)
    ("gru", torch.float32, "tf32", 1024, 2048, (2, 128), (4, 128)),  # (its own operands at 128 rows, as the LSTM's)
    ("gru", torch.float32, "tf32", 320, 4096, (1, 64), (4, 64)),  # (fp16 operands whole: the GRU's takes no slices)
    ("gru", torch.float32, "tf32", 1024, 1024, (1, 64), (2, 64)),  # (128: fp16 operands, whole)
    ("lstm", torch.float32, "tf32x3", 1024, 2048, (4, 64), (4, 64)),  # (3xTF32 in the step, no split copies)
    ("gru", torch.float32, "tf32x3", 512, 4096, (4, 64), (4, 64)),
    ("lstm", torch.float32, "tf32x3", 1024, 1024, (4, 64), (2, 64)),  # (128 values: the LSTM's, X3_PIECES_FROM)
    ("gru", torch.float32, "tf32x3", 1024, 1024, (1, 64), (2, 64)),  # (128: the GRU's split once stays)
    ("lstm", torch.float32, "tf32x3", 256, 2048, (1, 64), (1, 64)),  # (64 values, tiles 16: split once, gate split)
    ("lstm", torch.float32, "tf32x3", 5000, 100, (1, 64), (1, 64)),  # (128 values below hidden 1024: not measured)
    ("lstm", torch.float32, "tf32x3", 1024, 768, (1, 64), (1, 64)),
    ("lstm", torch.float32, "ieee", 1024, 2048, (2, 128), (4, 64)),  # (strict fp32's backward not measured at 128 rows)
    ("gru", torch.bfloat16, "ieee", 1024, 2048, (2, 128), (4, 128)),  # (at 64 rows slower in slices: PIECES_FROM)
    ("gru", torch.bfloat16, "ieee", 320, 4096, (1, 64), (4, 64)),
    ("gru", torch.bfloat16, "ieee", 1024, 1024, (2, 128), (2, 64)),  # (split-K before)
    ("rnn", torch.bfloat16, "ieee", 1024, 2048, (1, 64), (1, 64)),  # (no kernel in slices)
])
def test_slices_by_default_where_the_whole_tile_spilled(cell, dtype, precision, batch, hidden, forward, backward):
    """Planned for an H100 (132 multiprocessors), ``(pieces, block_b)`` forward (128 batch rows a
    program where its 64-row accumulator was 128 values a thread, 256 for fp32 weights, at no more
    programs; else slices where it was 256) and backward (where its tiles are 32 values a thread or
    more: the transpose plan, its product as one, in slices of 16 a tile; 128 rows where they were 64
    at 64 rows, at no more programs; asked for one slice, the plan before, the gate split). TF32 runs
    on fp16 operands where its forward has one slice at 64 rows."""
    from rnnbench.ops.plans import choose_plan

    gates = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    plans = {direction: choose_plan(batch, hidden, gates, dtype, torch.device("cuda"), multiprocessors=132,
                                    precision=precision, direction=direction) for direction in ("forward", "backward")}
    got = {direction: (plan.pieces, plan.block_b) for direction, plan in plans.items()}
    assert (got["forward"], got["backward"]) == (forward, backward), plans
    assert plans["forward"].half_operands == (precision == "tf32" and forward == (1, 64)), plans["forward"]
    if precision == "tf32x3":  # (in slices without split copies, X3_PIECES; else split once)
        assert plans["forward"].split_once == plans["forward"].split_fp16 == (forward[0] == 1), plans["forward"]
    if backward[0] > 1:
        assert not (plans["backward"].gate_split or plans["backward"].split_k), plans["backward"]


@pytest.mark.parametrize("cell", CELLS)
def test_strict_fp32_split_once_asked_for_is_the_plan_before_slices(cell):
    """The control of ``plan_sweep.py --cases strict_fp32_wide``: at batch 1024, hidden 2048 in strict
    fp32, the forward asked to split once is the whole tile on fp16 copies as planned before
    (``x3_pieces_default`` leaves a plan whose operand fields were asked for), and the LSTM's
    backward asked for one slice the gate split."""
    from rnnbench.ops.plans import STRICT_FP32_DEFAULT, choose_plan

    gates = {"lstm": 4, "gru": 3}[cell]
    forward = choose_plan(1024, 2048, gates, torch.float32, torch.device("cuda"), multiprocessors=132,
                          precision=STRICT_FP32_DEFAULT, split_once=True)
    assert (forward.pieces, forward.split_once, forward.split_fp16, forward.block_h) == (1, True, True, 256), forward
    backward = choose_plan(1024, 2048, gates, torch.float32, torch.device("cuda"), multiprocessors=132,
                           precision=STRICT_FP32_DEFAULT, direction="backward", pieces=1)
    assert (backward.pieces, backward.gate_split) == (1, gates if cell == "lstm" else 0), backward


def test_one_backward_slice_asked_for_is_the_plan_before_slices():
    """The control of ``plan_sweep.py --cases pieces_backward``: at batch 1024, hidden 2048 in bf16
    the backward asked for one slice is the gate split in chunks of 16, as planned before the
    slices (``results/h200/speed-map/aot-spills/plans_and_spills.txt``)."""
    from rnnbench.ops.plans import choose_plan

    whole = choose_plan(1024, 2048, 4, torch.bfloat16, torch.device("cuda"), multiprocessors=132,
                        direction="backward", pieces=1)
    assert (whole.pieces, whole.gate_split, whole.block_h, whole.block_k) == (1, 4, 256, 16), whole


_SPILLS = """
import json, sys, torch
from rnnbench.ops import aot
usage = {p: aot.variant_usage("lstm", "forward", torch.bfloat16, 1024, 1024, "ieee", {"block_b": 64}, {"pieces": p})[1]
         for p in (1, 8)}
print(json.dumps({p: u.get("stack") for p, u in usage.items()}))
"""


def test_slices_bound_the_accumulator_compiled_for_sm90():
    """bf16 at batch 1024, hidden 1024 at 64 rows a program (the default plan before 128 rows: 128
    units a program, the stacked accumulator 128 fp32 values a thread), compiled for sm_90: the
    whole tile spills more than 1 KB a thread, 8 slices of 16 units none
    (``results/h200/speed-map/aot-spills``)."""
    proc = uninterpreted("-c", _SPILLS)
    assert proc.returncode == 0, proc.stderr
    spills = json.loads(proc.stdout.splitlines()[-1])
    if spills["1"] is None:
        pytest.skip("no cuobjdump to read the spills")
    assert spills["1"] > 1024 and spills["8"] == 0, spills


_SAVED = """
import json, torch
from rnnbench.ops import aot
usage = {form: aot.variant_usage("lstm", "forward", torch.bfloat16, 1024, 1024, "ieee", {}, changes)[1]
         for form, changes in (("half", {}), ("fp32", {"half_saved": False}))}
print(json.dumps({form: (u.get("stack"), u.get("mufu_tanh")) for form, u in usage.items()}))
"""


def test_16bit_saved_gates_keep_one_register_layout_compiled_for_sm90():
    """bf16 at batch 1024, hidden 1024 on its default forward plan (128 rows, 2 slices), saving for the
    backward, compiled for sm_90: the gates saved 16-bit (``Plan.half_saved``, the default) spill
    fewer bytes than saved in fp32, and run the activations no more often. Triton 3.6 (the GPU's)
    computed them twice with fp32 gates, in the fp32 stores' register layout and in the 16-bit
    loads' (56 against 288 bytes, 160 tanh.approx against 288:
    ``results/h200/half-saved/aot_half_saved.txt``); Triton 3.9 (CI's) once either way (48 against
    72 bytes)."""
    proc = uninterpreted("-c", _SAVED)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads(proc.stdout.splitlines()[-1])
    if usage["half"][0] is None:
        pytest.skip("no cuobjdump to read the spills")
    (half_stack, half_tanh), (fp32_stack, fp32_tanh) = usage["half"], usage["fp32"]
    assert half_tanh <= fp32_tanh and half_stack < fp32_stack, usage
