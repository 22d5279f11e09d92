"""The LSTM's and GRU's forward with 16-bit weights on rows of their own padded to 16 bytes
(``Plan.pad_rows`` without half operands, ``SPLIT_ONCE`` 5): each program copies its rows of
``W_hh`` into a copy whose rows are ``H`` rounded up to 8 apart, and h is exchanged through padded
planes of its own beside the output. On CPU tensors under Triton's interpreter: output, final states
and every gradient against the float64 reference and bit for bit the unpadded forward's (every float
buffer starting as NaN), in one program and in six; the plan's rule, the default where hidden is
not a multiple of 8, for an H100; and, compiled for sm_90, the 16-byte copies the padding is for."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rnnbench.precision import tolerance

from test_recurrence import DTYPES, LENGTHS, check_layer, make_layer, padded_and_unpadded, run_layer, uninterpreted

CELLS = ("lstm", "gru")
# the exchange plan (the interpreter's default is on chip), resident in 16-column pieces or streamed
PLANS = {"pieces": {"h_on_chip": False, "block_k": 16}, "streamed": {"h_on_chip": False, "w_resident": False,
                                                                     "block_k": 16}}


def _same_bits(cell, tensors, dtype, fields, lengths=None):
    """The layer's outputs and gradients padded and unpadded: finite, and bit for bit the same."""
    from rnnbench.ops.recurrence import plan, recurrent_layer

    def check_plan(pad):
        p = plan(cell, tensors[0].shape[1], tensors[4].shape[1], DTYPES[dtype], torch.device("cpu"))
        assert p.pad_rows == pad and not p.half_operands and not p.gluon

    padded_and_unpadded(lambda: sum(run_layer(recurrent_layer, cell, tensors, DTYPES[dtype], lengths=lengths), []),
                        check_plan, **fields)


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("plan_name", list(PLANS))
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_16bit_padded_rows_match_reference_and_unpadded(cell, dtype, plan_name):
    """Hidden 37 (rows 40 apart), batch 3, 7 steps, with h0: within the dtype's tolerance of float64
    padded, and bit for bit the unpadded forward."""
    tensors = make_layer(cell, (3, 7, 5, 37))
    from rnnbench.ops.recurrence import plan_override

    with plan_override(pad_rows=True, **PLANS[plan_name]):
        check_layer(cell, tensors, dtype, tolerance(cell, dtype))
    _same_bits(cell, tensors, dtype, PLANS[plan_name])


@pytest.mark.usefixtures("interpreter", "nan_buffers")
@pytest.mark.parametrize("cell", CELLS)
def test_16bit_padded_rows_without_h0_and_with_lengths(cell):
    """No initial states (slot 0 never written: step 0 reads no row), and each sequence its own
    length (a finished row publishes zeros and keeps its state)."""
    x, _, _, w_ih, w_hh, b_ih, b_hh = make_layer(cell, (3, 7, 5, 37))
    _same_bits(cell, [x, None, None, w_ih, w_hh, b_ih, b_hh], "bf16", PLANS["streamed"])
    _same_bits(cell, make_layer(cell, (3, 7, 5, 37)), "bf16", PLANS["pieces"], LENGTHS)


@pytest.mark.usefixtures("concurrent_programs", "nan_buffers")
@pytest.mark.parametrize("weights", ["resident", "streamed"])
@pytest.mark.parametrize("cell", CELLS)
def test_16bit_padded_rows_across_programs(cell, weights):
    """Over 6 programs (hidden 37 in 3 unit blocks of 16, batch 20 in two batch blocks): each
    copies its own rows into the padded copy and publishes h into padded planes that the others
    read to unit 39; the padding of both is the last program's to write."""
    from rnnbench.ops.recurrence import plan_override

    fields = dict(block_h=16, block_b=16, w_resident=weights == "resident", block_k=16, h_on_chip=False)
    tensors = make_layer(cell, (20, 5, 4, 37))
    with plan_override(pad_rows=True, **fields):
        check_layer(cell, tensors, "bf16", tolerance(cell, "bf16"))
    _same_bits(cell, tensors, "bf16", fields)


def test_16bit_forwards_that_exchange_h_pad_unaligned_rows():
    """Planned for an H100: a 16-bit forward that exchanges h pads its rows by default where hidden
    is not a multiple of 8 (batch 128 and 32 at 650, 20 at 1500), nothing else of its plan moved;
    not at 640, nor asked not to (``forward_pad_rows=False``), nor on chip, on FMA units or as
    Gluon, nor (refused asked for) with fewer than 8 units a program; the backward's plan keeps its
    own rule; the RNN, an on-chip plan, strict fp32 and a plain fp32 forward refuse it asked for;
    the fp16-operand forward keeps its own (level 3)."""
    from rnnbench.ops.plans import _pads_16bit_forward, choose_plan, row_stride, split_once_level

    cuda = torch.device("cuda")

    def plan(batch, hidden, gates=4, dtype=torch.bfloat16, precision="ieee", **override):
        return choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132, precision=precision, **override)

    for gates in (4, 3):
        for dtype in (torch.bfloat16, torch.float16):
            for batch, hidden in ((128, 650), (32, 650), (20, 1500)):
                p = plan(batch, hidden, gates, dtype)
                assert p.pad_rows and not p.gluon and split_once_level(p) == 5
                assert row_stride(p, hidden) == -(-hidden // 8) * 8 > hidden
                assert p == plan(batch, hidden, gates, dtype, forward_pad_rows=True)
                unpadded = plan(batch, hidden, gates, dtype, forward_pad_rows=False)
                assert dataclasses.replace(p, pad_rows=False) == unpadded and split_once_level(unpadded) == 0
                assert plan(batch, hidden, gates, dtype, direction="backward") == plan(
                    batch, hidden, gates, dtype, direction="backward", forward_pad_rows=False)
                for other in (dict(h_on_chip=True), dict(fma=True), dict(gluon=True)):
                    assert not _pads_16bit_forward(dataclasses.replace(p, pad_rows=False, **other), "forward", 2,
                                                   gates, hidden)
            assert not plan(128, 640, gates, dtype).pad_rows
            assert not plan(20, 100, gates, dtype, h_on_chip=True).pad_rows
            # (with 4 units a program at hidden 100 no program would write units 100-103)
            assert not plan(20, 100, gates, dtype, h_on_chip=False, block_h=4).pad_rows
            assert plan(20, 100, gates, dtype, h_on_chip=False, block_h=8).pad_rows
            with pytest.raises(ValueError, match="multiple of 8 units"):
                plan(20, 100, gates, dtype, h_on_chip=False, block_h=4, pad_rows=True)
        assert not plan(128, 650, gates, torch.float32, "tf32x3").pad_rows
    assert not plan(128, 650, 1).pad_rows
    assert split_once_level(plan(128, 650, dtype=torch.float32, precision="tf32")) == 3
    for bad in (dict(gates=1), dict(h_on_chip=True, hidden=100), dict(dtype=torch.float32, precision="tf32x3"),
                dict(dtype=torch.float32, precision="ieee")):
        args = {"gates": 4, "hidden": 650, **bad}
        with pytest.raises(ValueError, match="pad_rows"):
            plan(128, args.pop("hidden"), args.pop("gates"), pad_rows=True, **args)


# Compiled for sm_90 (no GPU needed) in a process of its own, whose kernels are not interpreted:
# each padded and unpadded forward's global accesses (rnnbench.ops.aot.global_accesses) as JSON.
_ACCESSES = """
import dataclasses, json, sys
import torch
from rnnbench.ops.aot import compile_kernel, global_accesses
from rnnbench.ops.plans import choose_plan
cell, gates, dtype, precision = sys.argv[1], int(sys.argv[2]), getattr(torch, sys.argv[3]), sys.argv[4]
plan = choose_plan(128, 650, gates, dtype, torch.device("cuda"), multiprocessors=132, precision=precision, gluon=False)
kernels = {pad: compile_kernel(cell, "forward", dtype, 650, dataclasses.replace(plan, pad_rows=pad), precision)
           for pad in (True, False)}
print(json.dumps({pad: global_accesses(k.asm["ptx"]) for pad, k in kernels.items()}))
"""


@pytest.mark.parametrize("dtype, precision", [("bfloat16", "ieee"), ("float32", "tf32")])
@pytest.mark.parametrize("cell, gates", [("lstm", 4), ("gru", 3)])
def test_padded_forwards_copy_their_rows_16_bytes_at_a_time(cell, gates, dtype, precision):
    """What the padding is for, read in the PTX of the forward planned for an H100 at hidden 650,
    batch 128 (its own 16-bit rows: bf16's, and TF32's fp16 operands): padded, every copy of the
    weights' rows into shared memory is 16 bytes (``cp.async`` ``0x10``); unpadded, 4 bytes, none
    wider. A compile check of Triton's choice, not a timing."""
    import json

    proc = uninterpreted("-c", _ACCESSES, cell, str(gates), dtype, precision)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])

    def copies(accesses):
        return {name.rsplit(" ", 1)[1]: n for name, n in accesses.items() if name.startswith("cp.async")}

    assert copies(got["true"]).keys() == {"0x10"} and copies(got["true"])["0x10"] > 0, got["true"]
    assert copies(got["false"]).keys() == {"0x4"}, got["false"]
