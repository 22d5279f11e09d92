"""Strict fp32's streamed forward in 3xFP16 (``Plan.split_fp16``), on CPU tensors under Triton's
interpreter: the weights' rows and h divided by powers of two, each split into an fp16 high part
and a remainder times 2^11, three fp16 products (exact in fp32 here, as on tensor cores), the small
ones summed apart. Output, final states and every gradient against the float64 reference at fp32's
tolerance (1e-4: without its remainders a product keeps 11 bits, about 5e-4 off); weights and
initial states far outside fp16's range, which only the scales keep; the split itself; the plan's
rule for an H100."""

from __future__ import annotations

import pytest
import torch

from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

from test_recurrence import LENGTHS, SHAPES, _id, check_layer, make_layer, run_layer  # noqa: E402

tl = pytest.importorskip("triton.language")

from rnnbench.ops.common import _split_half  # noqa: E402

CELLS = ("lstm", "gru", "rnn_tanh")  # (the RNN's h under relu is unbounded: no scale from a bound)
STREAMED = {"w_resident": False, "block_k": 16, "split_once": True, "split_fp16": True}


def _check(cell, tensors, lengths=None, **plan_fields):
    from rnnbench.ops.plans import split_once_level
    from rnnbench.ops.recurrence import plan, plan_override

    b, h = tensors[0].shape[1], tensors[4].shape[1]
    with plan_override(**{**STREAMED, **plan_fields}):
        assert split_once_level(plan(cell, b, h, torch.float32, torch.device("cpu"))) == 4
        check_layer(cell, tensors, "fp32", tolerance(cell, "fp32"), lengths)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("cell, shape", [pytest.param(c, s, id=_id(c, s)) for c in CELLS for s in SHAPES])
def test_split_fp16_matches_reference(cell, shape):
    _check(cell, make_layer(cell, shape))


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("cell", CELLS)
def test_split_fp16_without_initial_states(cell):
    """No h0 (nor c0): step 0's recurrent term is zero (no row of h read), later steps' scale from
    the bound alone; against the reference from zero states, whose gradients to them are dropped."""
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import plan_override, recurrent_layer

    tensors = make_layer(cell, (3, 7, 5, 37))
    absent = [None if k in (1, 2) else t for k, t in enumerate(tensors)]
    gradients_to_states = 2 if cell == "lstm" else 1
    with plan_override(**STREAMED):
        got_out, got_grads = run_layer(recurrent_layer, cell, absent, torch.float32)
    zeros = [torch.zeros_like(t) if k in (1, 2) and t is not None else t for k, t in enumerate(tensors)]
    ref_out, ref_grads = run_layer(naive_layer, cell, [None if t is None else t.double() for t in zeros], torch.float64)
    ref_grads = ref_grads[:1] + ref_grads[1 + gradients_to_states:]  # (no h0, c0 given)
    assert len(got_out + got_grads) == len(ref_out + ref_grads)
    for k, (got, ref) in enumerate(zip(got_out + got_grads, ref_out + ref_grads)):
        assert relative_error(got, ref) <= tolerance(cell, "fp32"), k


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("cell", CELLS)
def test_split_fp16_with_variable_lengths(cell):
    """Each sequence its own length (4, 7 and 0 steps): a finished row publishes zeros, split."""
    _check(cell, make_layer(cell, (3, 7, 5, 37)), LENGTHS)


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("cell", CELLS)
def test_weights_and_initial_states_far_outside_fp16s_range(cell):
    """W_hh times 2^20 (past fp16's largest, 65504) with h0 times 2^-20, and W_hh times 2^-30 (below
    fp16's smallest subnormal, 2^-24): one step from h0 alone (no input term, no bias, c0 zero), so
    the recurrent product is the whole signal. Then h0 of one batch row at 2^20, another's at
    2^-12 (the GRU carries the large row on for every step). Unscaled, each would overflow or
    round to zero."""
    for w_scale, h_scale in ((2.0 ** 20, 2.0 ** -20), (2.0 ** -30, 1.0)):
        x, h0, c0, w_ih, w_hh, _, _ = make_layer(cell, (3, 1, 5, 37))
        c0 = None if c0 is None else c0 * 0
        _check(cell, [x * 0, h0 * h_scale, c0, w_ih, w_hh * w_scale, None, None])
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = make_layer(cell, (3, 5, 5, 37))
    h0 = h0 * torch.tensor([2.0 ** 20, 2.0 ** -12, 1.0])[:, None]
    _check(cell, [x, h0, c0, w_ih, w_hh * 2.0 ** -20, b_ih, b_hh])


@pytest.mark.usefixtures("concurrent_programs")
@pytest.mark.parametrize("cell", CELLS)
def test_split_fp16_across_programs(cell):
    """Over 6 programs (hidden 37 in 3 unit blocks, batch 20 in two batch blocks): each splits its
    own rows of W_hh into the shared copy, publishes h_t split in two slots reused every other
    step, and h0's pass a barrier of their own first; h0 of one row past fp16's range."""
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = make_layer(cell, (20, 5, 4, 37))
    h0[7] *= 2.0 ** 20
    _check(cell, [x, h0, c0, w_ih, w_hh, b_ih, b_hh], block_h=16, block_b=16)


def _split(x_ptr, hi_ptr, lo_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    hi, lo = _split_half(tl.load(x_ptr + o))
    tl.store(hi_ptr + o, hi)
    tl.store(lo_ptr + o, lo)


@pytest.mark.usefixtures("interpreter")
def test_split_half_keeps_22_bits_under_a_power_of_two():
    """``common._split_half`` on values already under their power of two (``|x| < 2^15``): ``hi``
    is ``x`` rounded to fp16, ``hi + lo / 2^11`` is ``x`` to 2^-22 of it (fp16 alone: 2^-11), or to
    2^-36 absolute below fp16's normal range; infinities kept whole (``lo`` 0, not NaN)."""
    import triton

    split = triton.jit(_split)  # under the interpreter (the fixture set TRITON_INTERPRET=1)
    gen = torch.Generator().manual_seed(0)
    scale = 2.0 ** torch.randint(-30, 15, (1021,), generator=gen)
    x = torch.cat([(torch.rand(1021, generator=gen) * 2 - 1) * scale, torch.tensor([float("inf"), -float("inf"), 0.0])])
    hi, lo = torch.empty(1024, dtype=torch.float16), torch.empty(1024, dtype=torch.float16)
    split[(1,)](x, hi, lo, 1024)
    assert torch.equal(hi, x.half())
    finite = x.isfinite()
    err = (hi.double() + lo.double() / 2048 - x.double())[finite].abs()
    assert (err <= torch.maximum(x.double()[finite].abs() * 2.0 ** -22, torch.tensor(2.0 ** -36))).all()
    assert ((hi.double() - x.double())[finite].abs() > x.double()[finite].abs() * 2.0 ** -13).any()  # lo mattered
    assert hi[-3:].tolist() == [float("inf"), -float("inf"), 0.0] and lo[-3:].tolist() == [0.0, 0.0, 0.0]


def test_strict_fp32_forwards_that_stream_their_weights_take_3xfp16():
    """Planned for an H100: the strict fp32 forwards whose weights stream (hidden 500 and up) run
    3xFP16 in 64-wide chunks, four in flight; nothing else does (resident weights, the RNN's relu,
    TF32, 16-bit weights, any backward). Asked for where it cannot run, refused."""
    from rnnbench.ops.plans import choose_plan, split_once_level

    def plan(batch, hidden, gates, dtype=torch.float32, precision="tf32x3", direction="forward", **override):
        return choose_plan(batch, hidden, gates, dtype, torch.device("cuda"), multiprocessors=132,
                           precision=precision, direction=direction, **override)

    for batch, hidden, gates in ((20, 500, 4), (32, 512, 3), (128, 512, 4), (128, 1024, 3), (256, 512, 4),
                                (20, 500, 1), (128, 1024, 1)):
        p = plan(batch, hidden, gates)
        assert p.split_fp16 and split_once_level(p) == 4 and not p.w_resident, (batch, hidden, gates)
        assert (p.block_k, p.num_stages) == (64, 4)
        assert not plan(batch, hidden, gates, direction="backward").split_fp16
        assert not plan(batch, hidden, gates, precision="tf32").split_fp16
        assert not plan(batch, hidden, gates, torch.bfloat16, "ieee").split_fp16
        assert split_once_level(plan(batch, hidden, gates, split_fp16=False)) in (1, 2)
    for batch, hidden, gates in ((20, 100, 4), (32, 128, 3), (20, 100, 1)):  # resident, on FMA units or on chip
        assert not plan(batch, hidden, gates).split_fp16
    # relu's h: no bound (recurrence.plan says so for "rnn_relu": the CUDA test
    # test_strict_fp32_forward_splits_h_once holds relu's streamed forward at level 1)
    assert not plan(20, 500, 1, bounded=False).split_fp16
    for bad in (dict(bounded=False), dict(w_resident=True), dict(split_once=False)):
        with pytest.raises(ValueError, match="split_fp16"):
            plan(128, 1024, 4, split_fp16=True, **bad)
