"""rnnbench.ops: one layer, one direction, on the Triton kernels (interpreted, one program per batch
block) against the readable float64 layer (``ops/<cell>/naive.py`` -> rnnbench.reference).

Every check covers the output, the final states and every gradient (input, h0, c0, both weight
matrices, both biases); the loss weights h_n and c_n too, so their backward paths are exercised.
Plans: h on chip (the default here: the program's h and gate gradients are the next step's matmul
operands, no barrier), h exchanged through memory with a barrier per step (weights resident in one
piece, in pieces of 16 columns (3 or 7 pieces), or re-read in K chunks of 16), and the batch split
into blocks of 16 rows; no initial states, and losses that leave the output or the final states
without a gradient.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

pytestmark = pytest.mark.usefixtures("interpreter")

CELLS = ("lstm", "gru", "rnn_tanh", "rnn_relu")
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
# (batch, seq, input, hidden): batch 1 and 3, seq 1 and 7, hidden 37 and 100, input != hidden
SHAPES = [(1, 1, 3, 37), (3, 7, 5, 37), (1, 7, 100, 100)]
PLANS = {"on_chip": {}, "exchange": {"h_on_chip": False}, "resident_pieces": {"block_k": 16},
         "streamed": {"w_resident": False, "block_k": 16}, "split_k": {"split_k": True},
         # the LSTM's and GRU's backward with each gate's partial apart (one program: every gate)
         "gate_split": {"w_resident": False, "block_k": 16, "gate_split": True},
         # 3xTF32 forward with h split once (its products are exact fp32 here: the split's
         # bookkeeping is what is checked), weights resident in one piece or in pieces, streamed
         # (split in the step), or streamed from a split copy
         "split_once": {"h_on_chip": False, "split_once": True},
         "split_once_pieces": {"block_k": 16, "split_once": True},
         "split_once_streamed": {"w_resident": False, "block_k": 16, "split_once": True},
         "split_w_once": {"w_resident": False, "block_k": 16, "split_once": True, "split_w_once": True},
         # the on-chip RNN's operands split once: TF32 parts (exact here), fp16 parts (3xFP16:
         # fp16 products here too, so its scales and remainders are checked to 2^-22)
         "chip_tf32": {"on_chip_split": "tf32"}, "chip_fp16": {"on_chip_split": "fp16"},
         # the RNN's forward on FMA units, a batch row a program (ops/rnn/fma.py)
         "fma": {"fma": True}}
CHIP_SPLIT_PLANS = ("chip_tf32", "chip_fp16", "fma")  # the RNN's only (Plan.on_chip_split, Plan.fma)
SPLIT_K_CELLS = ("lstm", "gru")  # the cells with a split-K backward (Plan.split_k)
GLUON_CELLS = ("lstm", "gru")  # the cells with a Gluon forward (Plan.gluon, ops/<cell>/gluon.py)
FP32_TOLERANCE = tolerance("lstm", "fp32")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _id(cell, shape, extra=""):
    b, t, i, h = shape
    return f"{cell}-B{b}-T{t}-I{i}-H{h}{extra}"


def make_layer(cell: str, shape, bias: bool = True, seed: int = 0) -> list:
    """``[x, h0, c0, w_ih, w_hh, b_ih, b_hh]`` in float32 (c0 None unless LSTM, biases None
    unless ``bias``), weights drawn as torch.nn draws them."""
    b, t, i, h = shape
    gen = torch.Generator().manual_seed(seed)
    g = GATES[cell]
    bound = h ** -0.5

    def uniform(*size):
        return (torch.rand(size, generator=gen) * 2 - 1) * bound

    return [torch.randn(t, b, i, generator=gen), torch.randn(b, h, generator=gen) * 0.5,
            torch.randn(b, h, generator=gen) * 0.5 if cell == "lstm" else None,
            uniform(g * h, i), uniform(g * h, h),
            uniform(g * h) if bias else None, uniform(g * h) if bias else None]


def run_layer(fn, cell, tensors, dtype, seed=1, lengths=None):
    """``fn``'s outputs and the gradients of a random linear loss of (output, h_n, c_n) with
    respect to every tensor given; tensors are cast to ``dtype`` first. The loss weighs every
    output position, padded ones too (a variable-length layer must give them no gradient)."""
    leaves = [None if t is None else t.to(dtype).requires_grad_() for t in tensors]
    out = fn(cell, *leaves, lengths=lengths)
    gen = torch.Generator().manual_seed(seed)
    loss = sum((o.double() * torch.randn(o.shape, generator=gen, dtype=torch.float64)).sum()
               for o in out if o is not None)
    grads = torch.autograd.grad(loss, [t for t in leaves if t is not None])
    return [o for o in out if o is not None], list(grads)


def padded_and_unpadded(run, check_plan=lambda pad: None, field="pad_rows", **override) -> list:
    """``run()``'s tensors under ``plan_override(**override)`` with ``field`` (``Plan.pad_rows``,
    or a direction's) False, then True, ``check_plan(pad)`` called inside each: every tensor is
    finite padded (the tests start their buffers as NaN, so a padding read before the kernel
    wrote it shows) and bit for bit the unpadded one (padded rows move addresses, not a value or
    the order of a sum). Returns the padded form's tensors."""
    from rnnbench.ops.recurrence import plan_override

    got = {}
    for pad in (False, True):
        with plan_override(**override, **{field: pad}):
            check_plan(pad)
            got[pad] = list(run())
    assert all(torch.isfinite(t).all() for t in got[True])
    assert all(torch.equal(a, b) for a, b in zip(got[False], got[True]))
    return got[True]


def check_layer(cell, tensors, dtype, tol, lengths=None):
    """The kernels' layer against the naive one in float64 (``lengths``: a variable-length batch)."""
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import recurrent_layer

    got_out, got_grads = run_layer(recurrent_layer, cell, tensors, DTYPES[dtype], lengths=lengths)
    # The reference sees the inputs as the kernel sees them: rounded to dtype, then widened.
    rounded = [None if t is None else t.to(DTYPES[dtype]).double() for t in tensors]
    ref_out, ref_grads = run_layer(naive_layer, cell, rounded, torch.float64, lengths=lengths)
    names = ["output", "h_n", "c_n"][: len(ref_out)]
    names += ["grad_" + n for n, t in zip(["x", "h0", "c0", "w_ih", "w_hh", "b_ih", "b_hh"], tensors) if t is not None]
    assert len(got_out) + len(got_grads) == len(names)
    for name, got, ref in zip(names, got_out + got_grads, ref_out + ref_grads):
        assert got.shape == ref.shape and got.dtype == DTYPES[dtype], name
        err = relative_error(got, ref)
        assert err <= tol, f"{name}: relative error {err:.3g} > {tol:g}"


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("cell, shape", [pytest.param(c, s, id=_id(c, s)) for c in CELLS for s in SHAPES])
def test_layer_matches_reference_fp32(cell, shape, plan):
    from rnnbench.ops.recurrence import plan_override

    if plan in ("split_k", "gate_split") and cell not in SPLIT_K_CELLS:
        pytest.skip(f"no {plan} backward for {cell}")
    if plan in CHIP_SPLIT_PLANS and not cell.startswith("rnn_"):
        pytest.skip(f"no {plan} plan for {cell}")
    with plan_override(**PLANS[plan]):
        check_layer(cell, make_layer(cell, shape), "fp32", FP32_TOLERANCE)


# Lengths of a variable-length batch of 3 at seq 7: one full, one ending early, one empty (its
# state passes through every step untouched: h_n = h0, and h_n's gradient reaches h0 whole).
LENGTHS = torch.tensor([4, 7, 0])


@pytest.mark.parametrize("plan", list(PLANS))
@pytest.mark.parametrize("cell", CELLS)
def test_variable_lengths_match_reference(cell, plan):
    """Each sequence its own length, on every plan: the output zero past each end (its gradient
    ignored there), each sequence's own final states, every gradient."""
    from rnnbench.ops.recurrence import plan_override

    if plan in ("split_k", "gate_split") and cell not in SPLIT_K_CELLS:
        pytest.skip(f"no {plan} backward for {cell}")
    if plan in CHIP_SPLIT_PLANS and not cell.startswith("rnn_"):
        pytest.skip(f"no {plan} plan for {cell}")
    with plan_override(**PLANS[plan]):
        check_layer(cell, make_layer(cell, (3, 7, 5, 37)), "fp32", FP32_TOLERANCE, LENGTHS)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_variable_lengths_half_precision(cell, dtype):
    check_layer(cell, make_layer(cell, (3, 7, 5, 37)), dtype, tolerance(cell, dtype), LENGTHS)


def test_variable_lengths_refused_in_one_line():
    from rnnbench.ops.recurrence import kernel_lengths

    cpu = torch.device("cpu")
    for bad, why in [(torch.tensor([1, 2]), "3 integers"), (torch.tensor([1.0, 2.0, 3.0]), "3 integers"),
                     (torch.tensor([1, 8, 2]), "from 0 to seq_len \\(7\\); got 1 to 8"),
                     (torch.tensor([-1, 2, 3]), "got -1 to 3")]:
        with pytest.raises(ValueError, match=why):
            kernel_lengths(bad, 7, 3, cpu)
    assert kernel_lengths(torch.tensor([7, 7, 7]), 7, 3, cpu) is None  # all full: the plain kernels
    got = kernel_lengths(torch.tensor([7, 0, 3]), 7, 3, cpu)
    assert got.dtype == torch.int32 and got.tolist() == [7, 0, 3]


@pytest.mark.parametrize("cell", CELLS)
def test_batch_split_across_blocks(cell):
    """20 rows in blocks of 16: two batch blocks, each with its own barrier counter."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_b=16):
        check_layer(cell, make_layer(cell, (20, 5, 4, 37)), "fp32", FP32_TOLERANCE)


@pytest.mark.parametrize("h0_scale, w_scale", [(1e6, 1.0), (1e-9, 1.0), (0.5, 1e-7), (0.5, 1e5)])
@pytest.mark.parametrize("cell", ["rnn_tanh", "rnn_relu"])
def test_chip_fp16_scales(cell, h0_scale, w_scale):
    """3xFP16 (``Plan.on_chip_split="fp16"``) where fp16 alone would overflow or flush: h0 past
    fp16's 65504 and below its normal range, weights 10^-7 and 10^5 (relu's h grows with them; the
    tanh saturates there, whose reference comparison fails for every plan, so it is left out)."""
    from rnnbench.ops.recurrence import plan_override

    if cell == "rnn_tanh" and w_scale > 1:
        pytest.skip("tanh saturated: ill-conditioned for any plan")
    tensors = make_layer(cell, (3, 7, 5, 37))
    tensors[1] = tensors[1] * (2 * h0_scale)
    tensors[4] = tensors[4] * w_scale
    with plan_override(on_chip_split="fp16"):
        check_layer(cell, tensors, "fp32", FP32_TOLERANCE)


@pytest.mark.parametrize("cell", CELLS)
def test_layer_without_bias(cell):
    check_layer(cell, make_layer(cell, (3, 7, 5, 37), bias=False), "fp32", FP32_TOLERANCE)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_layer_half_precision(cell, dtype):
    check_layer(cell, make_layer(cell, (3, 7, 5, 37)), dtype, tolerance(cell, dtype))


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", ["rnn_tanh", "rnn_relu"])
def test_fma_half_precision(cell, dtype):
    """The RNN on FMA units (``Plan.fma``) with 16-bit weights and states: read into fp32, h
    written (and d_pre, backward) in the weights' dtype."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(fma=True):
        check_layer(cell, make_layer(cell, (3, 7, 5, 37)), dtype, tolerance(cell, dtype))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("cell", ["rnn_tanh", "rnn_relu"])
def test_rnn_forward_projects_in_its_own_launch(cell, dtype):
    """The RNN's FMA forward with its projection computed by programs of its own launch
    (``Plan.produce``, asked for): one launch a forward, producers first (the interpreter runs them
    before the rows that wait for them), none of the projection kernel's; everything the layer
    returns against float64 with initial states and without, without biases, with lengths, and at
    more tiles than one (the rows of 40 steps at batch 3); the forward's outputs bit for bit those
    of the two launches (the same tiles, so the same sums)."""
    from rnnbench.ops import launch as launches
    from rnnbench.ops import recurrence
    from rnnbench.ops.recurrence import plan_override

    tol = FP32_TOLERANCE if dtype == "fp32" else tolerance(cell, dtype)
    layer = make_layer(cell, (3, 40, 5, 37))
    with plan_override(fma=True, forward_produce=True):
        launch = recurrence.layer_launch(cell, 3, 37, DTYPES[dtype], torch.device("cpu"))
        assert launch.forward.produce and not launch.backward.produce
        with launches.recording() as launched:
            produced = recurrence.recurrent_layer(cell, *[None if t is None else t.to(DTYPES[dtype]) for t in layer])
        (fn, grid, *_), = launched
        # (120 rows of 37 columns: four tiles of 32 x 64, so four producers before the 3 rows)
        assert fn.fn.__name__ == "rnn_forward_fma_kernel" and grid == (1, 4 + 3)
        check_layer(cell, layer, dtype, tol)
        check_layer(cell, make_layer(cell, (1, 7, 100, 100)), dtype, tol)
        check_layer(cell, make_layer(cell, (3, 7, 5, 37), bias=False), dtype, tol)
        check_layer(cell, make_layer(cell, (3, 9, 5, 37)), dtype, tol, lengths=torch.tensor([4, 9, 0]))
        x, h0, _, *weights = [None if t is None else t.to(DTYPES[dtype]) for t in layer]
        zeros = recurrence.recurrent_layer(cell, x, torch.zeros_like(h0), None, *weights)
        assert all(torch.equal(a, b) for a, b in zip(recurrence.recurrent_layer(cell, x, None, None, *weights), zeros)
                   if a is not None)  # (no h0: zeros in the kernel)
    with plan_override(fma=True, forward_produce=False):
        plain = recurrence.recurrent_layer(cell, *[None if t is None else t.to(DTYPES[dtype]) for t in layer])
    assert all(torch.equal(a, b) for a, b in zip(produced, plain) if a is not None)


def test_which_forwards_on_fma_units_produce():
    """``Plan.produce`` by default: the RNN's forward on FMA units at 4 warps (hidden 65-128), where
    at least ``PRODUCE_MIN_PROGRAMS`` multiprocessors are left beside the rows' programs; the LSTM's
    and GRU's there too, where their products are on tensor cores (``produce_default``; their FMA
    forward is Gluon's, CUDA only, so its plan is not chosen here); asked for elsewhere, refused;
    the producers one a tile up to the multiprocessors left."""
    from rnnbench.ops import plans

    def plan(batch, hidden, gates=1, direction="forward", **override):
        return plans.choose_plan(batch, hidden, gates, torch.float32, torch.device("cuda"), direction=direction,
                                 multiprocessors=132, **override)

    assert plan(20, 100).produce and plan(124, 128).produce
    assert not plan(125, 128).produce  # 7 left
    assert not plan(20, 64).produce  # 2 warps
    assert not plan(20, 100, direction="backward").produce
    assert not plan(20, 100, 4).produce and not plan(20, 100, fma=False).produce
    with pytest.raises(ValueError, match="produce is a forward on FMA units"):
        plan(20, 100, 3, produce=True)
    with pytest.raises(ValueError, match="beside the 132 batch rows"):
        plan(132, 100, produce=True)
    assert plans.producers(38, 20, 132) == 38 and plans.producers(200, 20, 132) == 112
    assert plans.producers(200, 131, 132) == 1 and plans.producers(200, 20, None) == 200
    for gates in (3, 4):
        assert plans.produce_default("forward", gates, True, 128, 32, 132, True)
        assert plans.produce_default("forward", gates, True, 64, 124, 132, True)  # (any warps; 8 left)
        assert not plans.produce_default("forward", gates, True, 128, 32, 132, False)  # IEEE fp32: no tile
        assert not plans.produce_default("forward", gates, True, 128, 125, 132, True)  # 7 left
        assert not plans.produce_default("backward", gates, True, 128, 32, 132, True)
        assert not plans.produce_default("forward", gates, False, 128, 32, 132, True)
        assert not plans.produce_default("forward", gates, True, 128, 32, None, True)  # (no CUDA)


def test_the_gated_forwards_produce_with_a_producer_a_tile():
    """The LSTM's and GRU's producing forward (``ops/gluon_produce.py``): 64-row tiles 64 wide, or
    128 where 64 would outnumber the multiprocessors left beside the rows, or none; the launch's
    producers one a tile (``recurrence.produces``, on a gated launch planned to produce: the plan
    itself is CUDA's), never past the eager projection's size."""
    import dataclasses

    from rnnbench.ops import gluon_produce, recurrence

    assert gluon_produce.tiles_for(960, 384, 100) == (64, 90)  # theano's GRU at batch 32: 15 x 6
    assert gluon_produce.tiles_for(960, 512, 100) == (128, 60)  # its LSTM: 15 x 8 = 120 > 100
    assert gluon_produce.tiles_for(600, 400, 112) == (64, 70)  # glample's LSTM at batch 20
    assert gluon_produce.tiles_for(3840, 512, 4) is None
    for cell, width in (("gru", 384), ("lstm", 512)):
        launch = recurrence.layer_launch(cell, 32, 128, torch.float32, torch.device("cpu"))
        launch = dataclasses.replace(launch, forward=dataclasses.replace(launch.forward, produce=True), slots=132)
        x = torch.empty(30, 32, 128)
        bn, count = gluon_produce.tiles_for(960, width, 100)
        assert recurrence.produces(launch, x) == recurrence.Produced(recurrence.Tiles(64, bn, 32), False, count)
        assert recurrence.produces(dataclasses.replace(launch, slots=40), x) is None  # 45 tiles at least, 8 left
        assert recurrence.produces(launch, torch.empty(30, 32, 8192)) is None  # (past EVEN_MAX_FLOP: cuBLAS')
        plain = dataclasses.replace(launch, forward=dataclasses.replace(launch.forward, produce=False))
        assert recurrence.produces(plain, x) is None


def test_a_forward_produces_eagerly_with_a_producer_a_tile(monkeypatch):
    """``recurrence.produces``: a plan that produces projects in its own launch only where every
    tile of the projection has a producer beside the rows (here 4 tiles at batch 3: 7 programs
    at least) and no CUDA graph is being captured (there the projection's own launch was the
    faster); never where the plan does not produce."""
    import dataclasses

    from rnnbench.ops import recurrence
    from rnnbench.ops.recurrence import plan_override

    x = torch.randn(40, 3, 5)  # 120 rows of 37 columns: 4 tiles of 32 x 64
    with plan_override(fma=True, forward_produce=True):
        launch = recurrence.layer_launch("rnn_tanh", 3, 37, torch.float32, torch.device("cpu"))
    assert recurrence.produces(launch, x)  # (the interpreter: a producer for every tile)
    assert recurrence.produces(dataclasses.replace(launch, slots=7), x)
    assert not recurrence.produces(dataclasses.replace(launch, slots=6), x)
    monkeypatch.setattr(recurrence, "capturing", lambda t: True)
    assert not recurrence.produces(launch, x)
    monkeypatch.undo()
    with plan_override(fma=True, forward_produce=False):
        assert not recurrence.produces(recurrence.layer_launch("rnn_tanh", 3, 37, torch.float32,
                                                               torch.device("cpu")), x)


def test_fma_kernels_take_no_barrier_counters(monkeypatch):
    """The FMA RNN (no barrier) runs both directions without asking for the shared counters, which
    the barrier kernels take (and grow: launch.counters)."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.recurrence import plan_override

    def refuse(count, device):
        raise AssertionError("the FMA kernels asked for barrier counters")

    monkeypatch.setattr(recurrence, "_counters", refuse)
    with plan_override(fma=True):
        check_layer("rnn_tanh", make_layer("rnn_tanh", (3, 7, 5, 37)), "fp32", FP32_TOLERANCE)
    with pytest.raises(AssertionError, match="asked for barrier counters"):  # the barrier kernels do ask
        check_layer("rnn_tanh", make_layer("rnn_tanh", (3, 7, 5, 37)), "fp32", FP32_TOLERANCE)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", SPLIT_K_CELLS)
def test_split_k_half_partials(cell, dtype):
    """The split-K backward with its partials stored in the weights' 16-bit dtype."""
    from rnnbench.ops.recurrence import plan_override

    from rnnbench.ops import recurrence

    with plan_override(split_k=True, backward_half_partials=True):
        backward = recurrence.layer_launch(cell, 3, 37, DTYPES[dtype], torch.device("cpu")).backward
        assert backward.split_k and backward.half_partials
        check_layer(cell, make_layer(cell, (3, 7, 5, 37)), dtype, tolerance(cell, dtype))


def test_split_k_pads_its_partials_at_64_batch_rows():
    """Planned for an H100: the LSTM's and GRU's split-K backward pads its partials' rows to 16
    bytes (``Plan.pad_rows``) by default where hidden is not a multiple of 8 and a program takes 64
    batch rows (batch 128, hidden 650, any dtype), not at 16 rows (batch 20, hidden 100 and 500),
    nor at 512 (at 576-704, multiples of 8, the gate split runs there since 6340195);
    ``backward_pad_rows`` asks either way, and a backward that is not split-K refuses
    it asked for. The forward's own ``pad_rows`` never reaches the backward."""
    from rnnbench.ops.plans import choose_plan, row_stride

    cuda = torch.device("cuda")

    def plan(batch, hidden, gates=4, dtype=torch.float32, precision="tf32", **override):
        return choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132, precision=precision,
                           direction="backward", **override)

    for gates in (4, 3):
        for dtype, precision in ((torch.float32, "tf32"), (torch.bfloat16, "ieee"), (torch.float32, "tf32x3")):
            p = plan(128, 650, gates, dtype, precision)
            assert p.split_k and p.block_b == 64 and p.pad_rows and row_stride(p, 650) == 656
            assert dataclasses.replace(p, pad_rows=False) == plan(128, 650, gates, dtype, precision,
                                                                  backward_pad_rows=False)
            for batch, hidden in ((20, 100), (20, 500), (32, 650), (128, 512)):
                q = plan(batch, hidden, gates, dtype, precision)
                assert q.split_k and not q.pad_rows, (batch, hidden, gates, dtype, precision)
            assert plan(20, 100, gates, dtype, precision, backward_pad_rows=True).pad_rows
            assert plan(128, 650, gates, dtype, precision, pad_rows=False).pad_rows  # (the forward's field)
    with pytest.raises(ValueError, match="pad_rows"):
        plan(128, 650, split_k=False, backward_pad_rows=True)


@pytest.mark.parametrize("cell", CELLS)
def test_layer_without_initial_states(cell):
    """h0 = c0 = None: the kernels start from zeros without a tensor of them (and still save h0 =
    0 for the weight gradient)."""
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import recurrent_layer

    tensors = make_layer(cell, (3, 7, 5, 37))
    zeros = [tensors[0], torch.zeros(3, 37), torch.zeros(3, 37) if cell == "lstm" else None, *tensors[3:]]
    got_out, got_grads = run_layer(recurrent_layer, cell, [tensors[0], None, None, *tensors[3:]], torch.float32)
    ref_out, ref_grads = run_layer(naive_layer, cell, [None if t is None else t.double() for t in zeros], torch.float64)
    ref_grads = [ref_grads[0], *ref_grads[2 if cell != "lstm" else 3:]]  # no h0 / c0 leaves on our side
    for got, ref in zip(got_out + got_grads, ref_out + ref_grads, strict=True):
        assert relative_error(got, ref) <= FP32_TOLERANCE


@pytest.mark.parametrize("used", ["output", "final_states"])
@pytest.mark.parametrize("cell", CELLS)
def test_gradient_through_one_output(cell, used, monkeypatch):
    """A loss of the output alone (no gradient reaches h_n, c_n) or of the final states alone (no
    output gradient): the absent gradients reach the backward kernel as absent (None, zeros inside
    it; autograd materialises no zero tensors for them), and the gradients are right."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import recurrent_layer

    arrived = []

    def spy(cell, d_out, d_h_n, d_c_n, *rest):
        arrived.append(tuple(g is None for g in (d_out, d_h_n, d_c_n)))
        return backward(cell, d_out, d_h_n, d_c_n, *rest)

    backward = recurrence.recurrence_backward
    monkeypatch.setattr(recurrence, "recurrence_backward", spy)
    tensors = make_layer(cell, (3, 7, 5, 37))
    grads = []
    for fn, dtype in ((recurrent_layer, torch.float32), (naive_layer, torch.float64)):
        leaves = [None if t is None else t.to(dtype).requires_grad_() for t in tensors]
        out, h_n, c_n = fn(cell, *leaves)
        loss = out.pow(2).sum() if used == "output" else h_n.pow(2).sum() + (0 if c_n is None else c_n.sum())
        grads.append(torch.autograd.grad(loss, [t for t in leaves if t is not None]))
    # d_c_n: the LSTM's is absent when only the output has a loss; the other cells never have one.
    absent = (False, True, True) if used == "output" else (True, False, cell != "lstm")
    assert arrived == [absent]
    for got, ref in zip(*grads, strict=True):
        assert relative_error(got, ref) <= FP32_TOLERANCE


@pytest.mark.parametrize("cell", CELLS)
def test_forward_without_grad_saves_nothing_and_agrees(cell):
    from rnnbench.ops.recurrence import recurrent_layer

    tensors = make_layer(cell, (3, 7, 5, 37))
    with torch.no_grad():
        plain = recurrent_layer(cell, *tensors)
    trained = recurrent_layer(cell, *[None if t is None else t.clone().requires_grad_() for t in tensors])
    assert not any(o.requires_grad for o in plain if o is not None)
    for a, b in zip(plain, trained):
        if a is not None:
            assert torch.equal(a, b.detach())


def test_reference_is_the_judge_and_can_fail():
    """A wrong weight makes the comparison fail: the check is not vacuous."""
    tensors = make_layer("lstm", (3, 7, 5, 37))
    broken = list(tensors)
    broken[4] = tensors[4].clone()
    broken[4][37:74] = 0  # the forget gate's recurrent rows
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import recurrent_layer

    good, _ = run_layer(recurrent_layer, "lstm", tensors, torch.float32)
    bad, _ = run_layer(naive_layer, "lstm", [None if t is None else t.double() for t in broken], torch.float64)
    assert relative_error(good[0], bad[0]) > 1e-3


def test_rnn_tf32_backward_runs_its_products_as_3xtf32():
    """Plain TF32 in the RNN's reverse recurrence missed the reference (H100), the LSTM's and
    GRU's did not; half types and strict fp32 keep their precision both ways."""
    from rnnbench.ops.plans import Plan
    from rnnbench.ops.recurrence import _Launch, layer_launch

    plan = Plan(block_b=16, block_h=16, w_resident=False)
    for cell, backward in (("rnn_tanh", "tf32x3"), ("gru", "tf32"), ("lstm", "tf32")):
        tf32 = _Launch(plan, plan, "tf32", False, 64, cell, 16)
        assert (tf32.forward_meta["PRECISION"], tf32.backward_meta["PRECISION"]) == ("tf32", backward)
    ieee = _Launch(plan, plan, "ieee", False, 64, "rnn_tanh", 16)
    assert (ieee.forward_meta["PRECISION"], ieee.backward_meta["PRECISION"]) == ("ieee", "ieee")
    assert layer_launch("rnn_relu", 3, 37, torch.float32, torch.device("cpu")).num_gates == 1


def test_plan_validation():
    from rnnbench.ops.plans import choose_plan

    cpu = torch.device("cpu")
    with pytest.raises(ValueError, match="wait for each other forever"):
        choose_plan(3, 100, 4, torch.float32, cpu, block_h=16)
    with pytest.raises(ValueError, match="power of 2"):
        choose_plan(3, 100, 4, torch.float32, cpu, block_b=24)
    plan = choose_plan(3, 100, 4, torch.float32, cpu)
    assert plan.grid(3, 100) == (1, 1) and plan.block_h == 128 and plan.block_b == 16 and plan.h_on_chip
    # A tile or weight path asked for means the exchange through memory, unless on chip is asked too.
    assert not choose_plan(3, 100, 4, torch.float32, cpu, block_k=16).h_on_chip
    assert not choose_plan(3, 100, 4, torch.float32, cpu, h_on_chip=False).h_on_chip
    assert choose_plan(3, 100, 4, torch.float32, cpu, h_on_chip=False).block_h == 128
    with pytest.raises(ValueError, match="h_on_chip needs"):
        choose_plan(3, 100, 4, torch.float32, cpu, h_on_chip=True, block_k=16)
    with pytest.raises(ValueError, match="h_on_chip needs"):
        choose_plan(3, 100, 4, torch.float32, cpu, h_on_chip=True, w_resident=False)
    cuda = torch.device("cuda")  # planned for an H100 without touching a GPU
    plan = choose_plan(128, 1024, 4, torch.bfloat16, cuda, multiprocessors=132)
    nh, nb = plan.grid(128, 1024)
    assert nh * nb <= 132 and nb == 2
    with pytest.raises(ValueError, match="resident"):
        choose_plan(128, 1024, 4, torch.bfloat16, cuda, multiprocessors=132, block_h=16, block_b=16)


def test_default_plans_for_the_h100():
    """The launch rules, planned for an H100 (132 multiprocessors) without touching a GPU."""
    from rnnbench.ops.plans import choose_plan

    cuda = torch.device("cuda")

    def plan(batch, hidden, gates, dtype, precision="ieee", direction="forward", **override):
        return choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132, precision=precision,
                           direction=direction, **override)

    # FlashRNN's LSTM: 4 gates x 16 units = a 64-row tile (one wgmma, one warpgroup) of 48 programs,
    # held in three pieces of 256 columns (96 KB: no padding to 1024).
    p = plan(16, 768, 4, torch.bfloat16)
    assert (p.block_h, p.block_b, p.w_resident, p.num_warps, p.grid(16, 768)) == (16, 16, True, 4, (48, 1))
    assert p.block_k == 256
    # Pieces of 8 KB of h, but 256 columns for 16-bit weights at 32 batch rows up to hidden 768
    # (measured faster); not for fp32 weights (TF32's own operands, asked for: its forwards take fp16
    # operands by default, Plan.half_operands) there, nor at 64 rows or hidden 1024 (spilled).
    assert plan(128, 512, 4, torch.bfloat16).block_k == plan(64, 768, 3, torch.float16).block_k == 256
    assert plan(128, 512, 4, torch.float32, "tf32", half_operands=False).block_k == 64
    assert plan(128, 1024, 4, torch.bfloat16).block_k == 64
    # 16-bit weights at 64 batch rows a program are streamed, not held in 64-column pieces; at 32
    # rows, and for fp32 weights, they stay resident.
    assert not plan(128, 1024, 4, torch.bfloat16).w_resident
    assert not plan(128, 1024, 3, torch.float16).w_resident
    assert plan(64, 1024, 4, torch.bfloat16).w_resident
    assert plan(128, 512, 4, torch.float32, "tf32").w_resident
    assert plan(64, 1024, 4, torch.bfloat16).block_k == plan(256, 1024, 1, torch.bfloat16).block_k == 128
    # Its backward is split-K on the forward's programs, W_stack^T resident (96 KB), partials 256
    # units high (16-bit weights, 16 batch rows); the transpose backward's 16-row weight tile would
    # go through mma.sync (spills): streamed.
    p = plan(16, 768, 4, torch.bfloat16, direction="backward")
    assert (p.split_k, p.w_resident, p.block_k, p.grid(16, 768)) == (True, True, 256, (48, 1))
    assert not plan(16, 768, 4, torch.bfloat16, direction="backward", split_k=False).w_resident
    # Partials 64 units high for fp32 weights (TF32 spilled) and at 32 batch rows; at most the
    # padded width at small hidden sizes.
    assert plan(16, 768, 4, torch.float32, "tf32", "backward").block_k == 64
    assert plan(128, 512, 4, torch.bfloat16, direction="backward").block_k == 64
    assert plan(20, 100, 4, torch.float16, direction="backward").block_k == 128
    # 16-bit weights keep 16-bit partials; fp32's stay fp32.
    assert plan(16, 768, 4, torch.float16, direction="backward").half_partials
    assert not plan(16, 768, 4, torch.float32, "tf32", "backward").half_partials
    # Split-K is the LSTM's and GRU's default up to hidden 768 on tensor cores, and up to 1024 for
    # 16-bit weights (TF32 at 1024 was slower than the transpose), not the RNN's (no kernel), not
    # on FMA products, and it may be turned off; from hidden 768 at 64 batch rows a program the
    # gate-split backward takes its place (below).
    assert plan(32, 1024, 4, torch.bfloat16, direction="backward").split_k
    assert plan(32, 1024, 3, torch.float16, direction="backward").block_k == 256
    assert not plan(128, 1024, 4, torch.bfloat16, direction="backward").split_k
    assert not plan(32, 1024, 4, torch.float32, "tf32", "backward").split_k
    assert not plan(32, 2048, 4, torch.bfloat16, direction="backward").split_k
    assert plan(32, 1024, 4, torch.float32, "tf32", "backward", split_k=True).split_k
    assert plan(32, 512, 3, torch.bfloat16, direction="backward").split_k
    assert not plan(32, 512, 1, torch.bfloat16, direction="backward").split_k
    assert not plan(20, 500, 4, torch.float32, direction="backward").split_k  # strict fp32 on FMA units
    assert plan(20, 500, 4, torch.float32, "tf32x3", "backward").split_k
    with pytest.raises(ValueError, match="LSTM's and GRU's backward only"):
        plan(16, 768, 1, torch.bfloat16, direction="backward", split_k=True)
    # The gate-split backward (each gate's partial apart, in groups of the cell's gates): where the
    # transpose plan ran (TF32 and strict fp32 past hidden 768, up to 1024; 3 chunks in flight at
    # 16-32 batch rows, at 64 as many 128 or 64 wide as shared memory holds), and in place of
    # split-K from hidden 768 at 64 batch rows a program (from 576 where hidden is a multiple of 8:
    # not at 650, nor at 32 rows); past 1024 up to 2048 in every dtype on
    # tensor cores (zaremba-large's 1500 at batch 20: results/h200/gate-split-wide), and up to 4096
    # at 32 units a program or fewer (not at batch 128's 64); not at 16-32 rows (split-K's), past
    # hidden 4096, where whole groups would not be resident, nor for the RNN. The GRU's grid is
    # whole groups of three (66 programs at hidden 1024).
    for b, h, g, dt, prec, stages, chunk in ((32, 1024, 4, torch.float32, "tf32", 3, 128),
                                            (128, 1024, 4, torch.float32, "tf32", 4, 64),
                                            (32, 1024, 3, torch.float32, "tf32x3", 3, 64),
                                            (128, 768, 4, torch.float32, "tf32", 4, 64),
                                            (128, 1024, 3, torch.float16, "ieee", 4, 128),
                                            (20, 1500, 4, torch.bfloat16, "ieee", 3, 128),
                                            (20, 1500, 3, torch.float32, "tf32", 3, 128),
                                            (20, 1500, 4, torch.float32, "tf32x3", 3, 64),
                                            (32, 2048, 4, torch.float32, "tf32", 3, 128),
                                            (128, 2048, 3, torch.bfloat16, "ieee", 4, 128),
                                            (128, 576, 4, torch.float32, "tf32", 4, 64),
                                            (128, 640, 3, torch.bfloat16, "ieee", 4, 128),
                                            (20, 4096, 4, torch.bfloat16, "ieee", 3, 128),
                                            (64, 3072, 3, torch.bfloat16, "ieee", 4, 128),
                                            (64, 2560, 4, torch.float32, "tf32", 4, 64),
                                            (20, 3072, 4, torch.float32, "tf32x3", 3, 64)):
        p = plan(b, h, g, dt, prec, "backward")
        assert (p.gate_split, p.split_k, p.w_resident, p.num_stages, p.block_k) == (g, False, False, stages, chunk)
    assert plan(128, 1024, 3, torch.float32, "tf32", "backward").grid(128, 1024) == (66, 2)
    # On 130 multiprocessors those 132 programs would not all be resident: the transpose plan's 128.
    fewer = choose_plan(128, 1024, 3, torch.float32, cuda, multiprocessors=130, precision="tf32", direction="backward")
    assert not fewer.gate_split and fewer.grid(128, 1024) == (64, 2)
    for b, h, g, dt, prec in ((32, 1024, 4, torch.bfloat16, "ieee"), (16, 768, 4, torch.float16, "ieee"),
                              (32, 768, 4, torch.float32, "tf32"), (128, 512, 4, torch.float32, "tf32"),
                              (32, 4104, 4, torch.float32, "tf32"), (128, 2560, 4, torch.float32, "tf32"),
                              (128, 4096, 3, torch.bfloat16, "ieee"),
                              (128, 1040, 4, torch.float32, "tf32"),
                              (20, 1500, 4, torch.float32, "ieee"), (128, 650, 4, torch.bfloat16, "ieee"),
                              (64, 640, 4, torch.float32, "tf32"),
                              (128, 1024, 1, torch.float32, "tf32")):
        assert not plan(b, h, g, dt, prec, "backward").gate_split, (b, h, g, dt, prec)
    assert not plan(128, 1024, 4, torch.float32, "tf32", "backward", gate_split=False).gate_split
    # The transpose plan's streamed chunks narrowed to fit in shared memory: 4 stages of 64 units'
    # and 64 batch rows' 128-wide fp32 chunks took 256 KB (OutOfResources on the H200 at hidden 2560-4096).
    for h in (2560, 4096):
        p = plan(128, h, 4, torch.float32, "tf32", "backward", gate_split=False)
        assert (p.block_b, p.block_h, p.num_stages, p.block_k) == (64, 64, 4, 64), h
        assert plan(128, h, 4, torch.bfloat16, direction="backward", gate_split=False).block_k == 128
    assert plan(32, 1024, 4, torch.bfloat16, direction="backward", gate_split=True, split_k=False).gate_split == 4
    with pytest.raises(ValueError, match="gate_split is the LSTM's and GRU's transpose backward"):
        plan(128, 1024, 4, torch.float32, "tf32", "backward", gate_split=True, w_resident=True)
    # A field named backward_<field> sets the backward plan's alone (the forward stays the default).
    assert plan(16, 768, 4, torch.bfloat16, backward_block_k=128) == plan(16, 768, 4, torch.bfloat16)
    assert plan(16, 768, 4, torch.bfloat16, direction="backward", backward_block_k=128).block_k == 128
    # And one named forward_<field> the forward's alone.
    assert plan(16, 768, 4, torch.bfloat16, "ieee", "backward", forward_block_k=512) == plan(
        16, 768, 4, torch.bfloat16, "ieee", "backward")
    assert plan(16, 768, 4, torch.bfloat16, forward_block_k=512).block_k == 512
    # Strict fp32 runs on FMA units: smallest tiles, most programs, weights streamed.
    p = plan(20, 500, 4, torch.float32)
    assert (p.block_h, p.w_resident, p.grid(20, 500)) == (4, False, (125, 1))  # 2 x 125 would not fit
    assert plan(20, 100, 4, torch.float32).grid(20, 100) == (25, 2)  # 16 batch rows: more programs
    assert plan(20, 500, 4, torch.float32, direction="backward").block_k == 16
    # Batch blocks of 16 rows, else 32, where the programs still fit at the smallest tile; else the
    # whole batch (up to 64 rows) per program. The split-K backward takes the forward's blocks;
    # the LSTM's and GRU's 3xTF32 transpose backward (slower split) and FMA backwards keep the
    # whole batch.
    assert plan(32, 512, 4, torch.bfloat16).grid(32, 512) == (32, 2)
    assert plan(128, 128, 4, torch.bfloat16).grid(128, 128) == (8, 8)
    assert plan(64, 512, 4, torch.float32, "tf32x3").grid(64, 512) == (32, 4)  # 128 programs
    assert plan(65, 512, 4, torch.float32, "tf32x3").grid(65, 512) == (32, 3)  # 32 rows: 5 x 32 would not fit
    assert plan(128, 512, 4, torch.bfloat16).grid(128, 512) == (32, 4)
    assert plan(128, 1024, 4, torch.bfloat16).grid(128, 1024) == (64, 2)
    assert plan(128, 128, 3, torch.float32, "tf32", "backward").grid(128, 128) == (8, 8)
    assert plan(128, 512, 1, torch.float32, "tf32").block_b == 16
    assert plan(128, 512, 1, torch.float32, "tf32", "backward").block_b == 16  # the RNN's (not split-K)
    assert plan(20, 500, 1, torch.float32, "tf32x3", "backward").block_b == 16
    assert plan(32, 512, 3, torch.bfloat16, direction="backward", split_k=False).block_b == 16
    assert plan(32, 1024, 4, torch.float32, "tf32", "backward").grid(32, 1024) == (64, 2)  # gate split
    assert plan(64, 1024, 3, torch.float32, "tf32", "backward").grid(64, 1024) == (66, 2)  # 32 rows
    assert plan(32, 1024, 4, torch.float32, "tf32x3", "backward").block_b == 32  # 3xTF32 transpose
    assert plan(32, 1024, 3, torch.float32, "tf32x3", "backward").block_b == 32
    assert plan(20, 500, 4, torch.float32, direction="backward").block_b == 32  # FMA products
    assert plan(32, 512, 4, torch.bfloat16, direction="backward").block_b == 16  # split-K: the forward's
    # Strict fp32 as 3xTF32 (the default on CUDA): tensor-core tiles; the forward resident only up
    # to 128 columns (the operand's split is held in registers), the backward streamed, its split-K
    # partials 128 units high at 16-32 batch rows, at 8 warps (half the waits: measured faster);
    # 64 rows a program and widths of 64 keep 64 units, at 64 rows and 16 units a program on one
    # warpgroup (4 warps: faster), with 32 units (batch 512) on 8.
    p = plan(20, 100, 4, torch.float32, "tf32x3")
    assert (p.block_h, p.w_resident, p.grid(20, 100)) == (16, True, (7, 2))
    assert not plan(20, 500, 4, torch.float32, "tf32x3").w_resident
    p = plan(20, 500, 4, torch.float32, "tf32x3", "backward")
    assert (p.block_h, p.w_resident, p.block_k, p.num_warps) == (16, False, 128, 8)
    p = plan(128, 512, 3, torch.float32, "tf32x3", "backward")
    assert (p.block_b, p.split_k, p.block_k, p.num_warps) == (32, True, 128, 8)
    assert (plan(20, 100, 4, torch.float32, "tf32x3", "backward").block_k
            == plan(128, 128, 3, torch.float32, "tf32x3", "backward").block_k == 128)
    p = plan(512, 512, 4, torch.float32, "tf32x3", "backward")
    assert (p.block_b, p.block_h, p.block_k, p.num_warps) == (64, 32, 64, 8)
    p = plan(256, 512, 3, torch.float32, "tf32x3", "backward")
    assert (p.block_b, p.split_k, p.num_warps) == (64, True, 4)
    # ... but not TF32's or 16-bit split-K backward at 64 rows (8 warps: 4 spilled or were slower).
    assert plan(256, 512, 4, torch.float32, "tf32", "backward").num_warps == 8
    assert plan(128, 1024, 4, torch.bfloat16, direction="backward").num_warps == 8
    # A forward of fp32 weights (3xTF32 or TF32) at 64 batch rows a program runs one warpgroup
    # (the two of 8 warps each read every weight); 16-bit weights keep 8 there, and so do TF32's
    # forwards on fp16 operands (Plan.half_operands: TF32's default past hidden 128), and the
    # transpose backward keeps 8.
    for precision, asked in (("tf32x3", {}), ("tf32", {"half_operands": False}), ("tf32", {})):
        for batch, hidden, gates in ((128, 1024, 4), (128, 1024, 3), (256, 512, 4), (128, 768, 3)):
            p = plan(batch, hidden, gates, torch.float32, precision, **asked)
            half = p.half_operands
            assert half == (precision == "tf32" and not asked), (precision, asked, batch, hidden, gates)
            assert (p.block_b, p.num_warps) == (64, 8 if half else 4), (precision, asked, batch, hidden, gates)
        # A 128-row tile (32 units a program) was not measured: 8 warps, both ways.
        for direction in ("forward", "backward"):
            p = plan(129, 768, 4, torch.float32, precision, direction)
            assert (p.block_b, p.block_h, p.num_warps) == (64, 32, 8)
        assert plan(128, 1024, 4, torch.float32, precision, "backward").num_warps == 8
    assert plan(128, 512, 4, torch.float32, "tf32x3").num_warps == 4  # 32 rows: 4 already
    assert plan(128, 1024, 4, torch.bfloat16).num_warps == plan(128, 1024, 3, torch.float16).num_warps == 8
    p = plan(1, 37, 3, torch.float32, "tf32x3", "backward")
    assert (p.block_k, p.num_warps) == (64, 4)
    # Plain TF32 keeps 64 units high at 4 warps there (128 measured no faster).
    p = plan(128, 128, 3, torch.float32, "tf32", "backward")
    assert (p.split_k, p.block_k, p.num_warps) == (True, 64, 4)
    # The RNN's TF32 backward runs 3xTF32 too: resident it would spill there, unlike fp16's. The
    # LSTM's and GRU's stay plain TF32, streamed in chunks of 128.
    assert not plan(32, 512, 1, torch.float32, "tf32", "backward").w_resident
    assert plan(32, 512, 1, torch.float32, "tf32", "backward").block_k == 64
    assert plan(32, 1024, 4, torch.float32, "tf32", "backward").block_k == 128
    assert plan(32, 1024, 3, torch.float32, "tf32", "backward").block_k == 128
    # TF32 on tensor cores: resident while the weights and a staged piece of h fit in shared memory.
    assert plan(32, 512, 4, torch.float32, "tf32").w_resident
    # 64 x 1024 fp32 weights (256 KB) do not fit: streamed as TF32, resident as fp16 (Plan.half_operands)
    assert not plan(16, 1024, 4, torch.float32, "tf32", forward_half_operands=False).w_resident
    assert plan(16, 1024, 4, torch.float32, "tf32").w_resident
    # The RNN's single gate needs 64 units for a 64-row tile; then its backward is resident too.
    assert plan(32, 512, 1, torch.float16).block_h == 64
    assert plan(32, 512, 1, torch.float16, direction="backward").w_resident
    # Stacked tiles of up to 128 rows: one program per 16 batch rows holds every unit (h on chip, no
    # barrier), both directions: the RNN up to hidden 128 in every tensor-core precision (3xTF32 at
    # 8 warps), the LSTM and GRU up to 32 units.
    for gates, hidden, dtype, precision, warps in ((1, 100, torch.bfloat16, "ieee", 4), (1, 128, torch.float16, "ieee", 4),
                                                   (1, 100, torch.float32, "tf32", 4), (1, 100, torch.float32, "tf32x3", 8),
                                                   (4, 32, torch.bfloat16, "ieee", 4), (3, 20, torch.float16, "ieee", 4)):
        for direction in ("forward", "backward"):
            # (the RNN's fp32 default is on FMA units: test_the_rnn_on_fma_units_where_its_rule_allows)
            p = plan(128, hidden, gates, dtype, precision, direction, fma=False)
            kp = 128 if hidden > 64 else 32
            assert p.h_on_chip and (p.block_h, p.block_k, p.block_b, p.grid(128, hidden)) == (kp, kp, 16, (1, 8))
            if gates == 1:
                assert p.num_warps == (8 if direction == "backward" and precision == "tf32" else warps)
    # Not on chip: taller tiles (the RNN past 128 units; the LSTM and GRU past 32: 512 rows at 100
    # were slower); the LSTM's and GRU's 3xTF32 (strict fp32); FMA products.
    assert not plan(32, 256, 1, torch.bfloat16).h_on_chip
    # A forced on-chip tile that does not fit in shared memory is refused (fp32 LSTM at 100: 256 KB).
    with pytest.raises(ValueError, match="does not fit in shared memory"):
        plan(20, 100, 4, torch.float32, "tf32", h_on_chip=True)
    assert plan(20, 100, 4, torch.bfloat16, h_on_chip=True).h_on_chip  # 128 KB: fits
    # More batch rows than 16 per multiprocessor: the exchange plan's wider batch blocks, not a refusal.
    assert plan(132 * 16, 100, 1, torch.bfloat16).h_on_chip
    p = plan(132 * 16 + 1, 100, 1, torch.bfloat16)
    assert not p.h_on_chip and p.block_b == 64
    assert not plan(32, 100, 4, torch.bfloat16).h_on_chip
    assert plan(32, 32, 4, torch.float32, "tf32").h_on_chip and plan(32, 32, 4, torch.float32, "tf32", "backward").h_on_chip
    assert not plan(32, 32, 4, torch.float32, "tf32x3", "backward").h_on_chip
    assert not plan(20, 100, 1, torch.float32, "ieee", fma=False).h_on_chip


def test_strict_fp32_forwards_that_stream_their_weights_split_h_once():
    """``Plan.split_once``, planned for an H100: strict fp32 (3xTF32) forwards whose weights are
    streamed split h once, and from 64 batch rows a program the weights too
    (``Plan.split_w_once``); nothing else does (resident weights, on chip, TF32, 16-bit weights,
    any backward). Their chunks are 32 wide, six in flight with the copy; asked for 64 wide with
    the copy, three, not four: four fp32 tiles a chunk would take 256 KB of shared memory. Asked
    for where it cannot run, refused. (The LSTM's and GRU's streamed forwards take 3xFP16 by default,
    ``Plan.split_fp16``, tests/ops/test_split_fp16.py: this is their 3xTF32 plan without it.)"""
    from rnnbench.ops.plans import choose_plan, split_once_level

    cuda = torch.device("cuda")

    def plan(batch, hidden, gates, dtype=torch.float32, precision="tf32x3", direction="forward", **override):
        return choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132, precision=precision,
                           direction=direction, **{"split_fp16": False, **override})

    for batch, hidden, gates, level in ((20, 500, 4, 1), (32, 512, 3, 1), (20, 500, 1, 1), (128, 512, 4, 1),
                                        (128, 1024, 3, 2), (256, 512, 4, 2), (20, 100, 4, 0), (32, 128, 3, 0)):
        p = plan(batch, hidden, gates)
        assert split_once_level(p) == level and p.w_resident == (level == 0), (batch, hidden, gates)
        assert not plan(batch, hidden, gates, direction="backward").split_once
        assert not plan(batch, hidden, gates, precision="tf32").split_once
        assert not plan(batch, hidden, gates, torch.bfloat16, "ieee").split_once
    assert plan(20, 100, 1).h_on_chip and not plan(20, 100, 1).split_once
    # 32-wide chunks (64 spilled), six in flight with the weights' copy (the default four without).
    assert [(plan(*case).block_k, plan(*case).num_stages) for case in ((20, 500, 4), (128, 1024, 4))] == [(32, 4), (32, 6)]
    assert (plan(128, 1024, 4, split_once=False).block_k, plan(128, 1024, 4, split_once=False).num_stages) == (64, 4)
    assert plan(128, 1024, 4, block_k=64).num_stages == 3  # 64 KB a chunk with the copy: three fit
    assert plan(128, 1024, 4, block_k=64, split_w_once=False).num_stages == 4  # 48 KB without
    assert plan(20, 100, 4, split_once=True).split_once  # resident, when asked
    for bad in (dict(dtype=torch.bfloat16, precision="ieee"), dict(precision="tf32"), dict(precision="ieee")):
        with pytest.raises(ValueError, match="split_once"):
            plan(20, 500, 4, split_once=True, **bad)
    with pytest.raises(ValueError, match="split_once"):
        plan(20, 100, 1, split_once=True)  # on chip


def test_the_on_chip_rnn_splits_strict_fp32_once_in_fp16():
    """``Plan.on_chip_split``, planned for an H100: the RNN's strict fp32 forward on chip is 3xFP16
    (hidden 37 to 128, any batch that stays on chip); not its backward, not TF32, not the exchange
    plan (hidden 256), not the LSTM or GRU, not the interpreter's plans. Asked for where it cannot
    run, refused."""
    from rnnbench.ops.plans import choose_plan

    def plan(batch, hidden, gates=1, dtype=torch.float32, precision="tf32x3", direction="forward", device="cuda",
             **override):
        return choose_plan(batch, hidden, gates, dtype, torch.device(device), multiprocessors=132,
                           precision=precision, direction=direction, **override)

    for batch, hidden in ((20, 100), (3, 37), (128, 64), (32, 128)):  # (fma=False: the tensor-core plan)
        p = plan(batch, hidden, fma=False)
        assert p.h_on_chip and p.on_chip_split == "fp16", (batch, hidden)
        assert plan(batch, hidden, direction="backward", fma=False).on_chip_split == ""
        assert plan(batch, hidden, precision="tf32", fma=False).on_chip_split == ""
        assert plan(batch, hidden, device="cpu").on_chip_split == ""
        assert plan(batch, hidden).fma and plan(batch, hidden).on_chip_split == ""  # the default: FMA units
    assert not plan(20, 256).h_on_chip and plan(20, 256).on_chip_split == ""
    assert plan(20, 32, 4, precision="tf32").on_chip_split == ""
    assert plan(20, 100, on_chip_split="tf32").on_chip_split == "tf32"
    for bad in (dict(gates=4, precision="tf32", hidden=32), dict(precision="tf32"), dict(h_on_chip=False),
                dict(dtype=torch.bfloat16, precision="ieee")):
        with pytest.raises(ValueError, match="on_chip_split"):
            plan(**{"batch": 20, "hidden": 100, **bad, "on_chip_split": "fp16"})
    with pytest.raises(ValueError, match="on_chip_split is one of"):
        plan(20, 100, on_chip_split="bf16")
    assert not plan(20, 500, 4, split_once=True, direction="backward").split_once  # a forward's field


def test_the_rnn_on_fma_units_where_its_rule_allows():
    """``Plan.fma``, planned for an H100: the RNN's default in every dtype (fp32 strict, TF32 or
    IEEE, bf16, fp16) up to hidden 128 and one batch row per multiprocessor (two with fp32
    weights), both directions, a program per row holding every unit on chip at 1-4 warps (a thread
    per unit); not past hidden 128 or those rows, for the LSTM or GRU, under the interpreter, nor
    where a tile, warps or an on-chip split is asked for. Asked for, it runs anywhere its
    registers hold W_hh; elsewhere refused."""
    def plan(batch, hidden, gates=1, dtype=torch.float32, precision="tf32x3", direction="forward", **override):
        return _plan_for_an_h100(batch, hidden, gates, dtype, precision, direction, **override)

    for batch, hidden, warps in ((20, 100, 4), (1, 1, 1), (132, 128, 4), (3, 37, 2), (128, 64, 2)):
        for dtype, precision in ((torch.float32, "tf32x3"), (torch.float32, "tf32"), (torch.float32, "ieee"),
                                 (torch.bfloat16, "ieee"), (torch.float16, "ieee")):
            for direction in ("forward", "backward"):
                p = plan(batch, hidden, dtype=dtype, precision=precision, direction=direction)
                assert p.fma and p.h_on_chip and p.grid(batch, hidden) == (1, batch), (batch, hidden, precision)
                assert (p.block_b, p.block_h, p.block_k, p.num_warps) == (1, max(16, 1 << (hidden - 1).bit_length()),
                                                                          max(16, 1 << (hidden - 1).bit_length()), warps)
    assert plan(264, 100).fma and plan(264, 100, precision="tf32", direction="backward").fma  # two rows a multiprocessor
    for off in (dict(batch=265), dict(batch=133, dtype=torch.bfloat16), dict(batch=133, dtype=torch.float16),
                dict(hidden=129), dict(gates=4, hidden=32), dict(gates=3, hidden=32), dict(block_b=16), dict(num_warps=8),
                dict(h_on_chip=False), dict(on_chip_split="fp16"), dict(block_k=64), dict(device="cpu")):
        assert not plan(**{"batch": 20, "hidden": 100, **off}).fma, off
    assert plan(500, 100, fma=True).grid(500, 100) == (1, 500)  # no residency limit: nobody waits
    assert plan(20, 100, device="cpu", fma=True).fma  # the interpreter runs it (tests)
    for bad in (dict(hidden=129), dict(gates=4, hidden=32), dict(block_b=16), dict(h_on_chip=False),
                dict(on_chip_split="fp16")):
        with pytest.raises(ValueError, match="fma is the RNN's"):
            plan(**{"batch": 20, "hidden": 100, **bad, "fma": True})
    assert plan(65535, 100, fma=True).grid(65535, 100) == (1, 65535)
    with pytest.raises(ValueError, match="at most 65535 rows"):  # a program per row: CUDA's grid in y
        plan(65536, 100, fma=True)


@pytest.mark.parametrize("gates", [3, 4])
def test_the_gated_forwards_on_fma_units_where_their_rule_allows(monkeypatch, gates):
    """``Plan.fma`` for the LSTM and GRU, planned for an H100 as if this Triton had the Gluon
    kernels: asked for (``forward_fma``), the forward runs a program per batch row with a thread per
    unit (1-4 warps; twice as many with 16-bit weights from hidden 65 for the GRU, 101 for the LSTM,
    k in two parts), up to hidden 128, in every dtype, its W_hh^T on chip; never the backward, past
    hidden 128, on the CPU, or where Triton lacks Gluon. By default in every dtype up to one batch
    row per multiprocessor (the GRU's fp32 up to four), where no tile is asked for."""
    from rnnbench.ops import gluon_common

    def plan(batch, hidden, dtype=torch.float32, direction="forward", **override):
        return _plan_for_an_h100(batch, hidden, gates, dtype, "tf32x3" if dtype == torch.float32 else "ieee",
                                 direction, **override)

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for batch, hidden, warps, gru16, lstm16 in ((32, 128, 4, 8, 8), (1, 1, 1, 1, 1), (3, 37, 2, 2, 2),
                                                (20, 100, 4, 8, 4), (500, 64, 2, 2, 2), (7, 65, 4, 8, 4),
                                                (7, 101, 4, 8, 8)):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            p = plan(batch, hidden, dtype=dtype, forward_fma=True)
            want = warps if dtype == torch.float32 else gru16 if gates == 3 else lstm16
            assert p.fma and p.grid(batch, hidden) == (1, batch) and p.num_warps == want, (batch, hidden, dtype)
            assert not plan(batch, hidden, dtype=dtype, direction="backward", forward_fma=True).fma
    # The default: every dtype up to one row per multiprocessor (the GRU's fp32 up to four), no
    # tile asked for.
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        assert plan(132, 128, dtype).fma and plan(20, 100, dtype).fma and plan(3, 37, dtype).fma, dtype
        assert plan(133, 128, dtype).fma == (dtype == torch.float32 and gates == 3), dtype
    assert _plan_for_an_h100(32, 128, gates, torch.float32, "tf32").fma
    assert plan(528, 128).fma == (gates == 3) and not plan(529, 128).fma
    for off in (dict(hidden=129), dict(block_b=16), dict(direction="backward")):
        assert not plan(**{"batch": 32, "hidden": 128, **off}).fma, off
    for bad in (dict(hidden=129), dict(direction="backward"), dict(device="cpu")):
        with pytest.raises(ValueError, match="the LSTM's and GRU's forwards there"):
            plan(**{"batch": 32, "hidden": 128, **bad, "fma": True})
    monkeypatch.setattr(gluon_common, "AVAILABLE", False)
    with pytest.raises(ValueError, match="the LSTM's and GRU's forwards there"):
        plan(32, 128, fma=True)


@pytest.mark.parametrize("gates", [3, 4])
def test_tf32_forwards_on_fma_units_hold_their_weights_as_fp16(monkeypatch, gates):
    """``Plan.half_weights``, planned for an H100 as if this Triton had the Gluon kernels: the LSTM's
    and GRU's TF32 forward on FMA units holds W_hh^T as scaled fp16 where 16-bit weights split k
    in two (the GRU from hidden 65, the LSTM from 101), and then splits it as theirs; asked for
    below that, it keeps one part; never in strict fp32, in 16-bit dtypes, off FMA units or in
    the backward; asked for there, refused; turned off, fp32's warps."""
    from rnnbench.ops import gluon_common

    def plan(batch, hidden, dtype=torch.float32, precision="tf32", direction="forward", **override):
        return _plan_for_an_h100(batch, hidden, gates, dtype, precision, direction, **override)

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for batch, hidden, fp32_warps in ((32, 128, 4), (20, 100, 4), (3, 37, 2), (7, 65, 4), (7, 101, 4), (1, 1, 1)):
        bf16 = plan(batch, hidden, torch.bfloat16, "ieee")
        split = bf16.num_warps > fp32_warps
        assert plan(batch, hidden).half_weights == split and split == (hidden >= (65 if gates == 3 else 101))
        half = plan(batch, hidden, half_weights=True)
        assert half.fma and half.half_weights and half.num_warps == bf16.num_warps, (batch, hidden)
        off = plan(batch, hidden, half_weights=False)
        assert off.fma and not off.half_weights and off.num_warps == fp32_warps, (batch, hidden)
        for precision in ("ieee", "tf32x3"):
            assert not plan(batch, hidden, precision=precision).half_weights, precision
        assert not bf16.half_weights and not plan(batch, hidden, direction="backward").half_weights
    assert plan(32, 128).num_warps == 8 and plan(20, 100).num_warps == (8 if gates == 3 else 4)  # (k in two parts)
    assert not plan(20, 100).half_weights if gates == 4 else plan(20, 100).half_weights
    assert not plan(32, 128, fma=False).half_weights and not plan(32, 129).half_weights
    for bad in (dict(precision="ieee"), dict(dtype=torch.bfloat16, precision="ieee"), dict(fma=False)):
        with pytest.raises(ValueError, match="half_weights is the LSTM's and GRU's forward on FMA units"):
            plan(32, 128, half_weights=True, **bad)


def _plan_for_an_h100(batch, hidden, gates, dtype=torch.bfloat16, precision="ieee", direction="forward",
                      device="cuda", sms=132, **override):
    from rnnbench.ops.plans import choose_plan

    return choose_plan(batch, hidden, gates, dtype, torch.device(device), multiprocessors=sms, precision=precision,
                       direction=direction, **override)


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_the_gluon_forward_where_its_rule_allows(monkeypatch, cell):
    """``Plan.gluon``, planned for an H100 as if this Triton had the Gluon kernels: the LSTM's and
    GRU's 16-bit forward with resident weights, 16 units and at most 32 batch rows a program, h
    more than one piece (hidden 257 to 1024, a multiple of 4); not their backward, not fp32 or
    TF32, not hidden 100-256 (one piece: no gain), not 64 batch rows (the weights stream), not
    exact activations (``fast_activations=False``: the kernels' tanh is the MUFU's), not the
    interpreter's plans; never where Triton lacks it. Asked for where it cannot run, refused."""
    from rnnbench.ops import gluon_common

    gates = GATES[cell]

    def plan(batch, hidden, **kwargs):
        return _plan_for_an_h100(batch, hidden, gates, **kwargs)

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for batch, hidden, dtype in ((16, 768, torch.float16), (16, 768, torch.bfloat16), (32, 512, torch.bfloat16),
                                 (128, 512, torch.bfloat16), (20, 500, torch.float16), (3, 260, torch.bfloat16),
                                 (32, 1024, torch.bfloat16)):
        chosen = plan(batch, hidden, dtype=dtype)
        assert chosen.gluon and not chosen.h_on_chip and chosen.w_resident, (batch, hidden, dtype)
        assert (chosen.block_h, chosen.num_warps) == (16, 4) and chosen.block_b <= 32
        assert not plan(batch, hidden, dtype=dtype, direction="backward").gluon
        assert not plan(batch, hidden, dtype=dtype, device="cpu").gluon
        assert not plan(batch, hidden, dtype=dtype, block_h=32).gluon
        assert not plan(batch, hidden, dtype=dtype, fast_activations=False).gluon  # its tanh is the MUFU's
    for hidden in (100, 128, 256, 257, 258):  # one piece; rows cp.async cannot copy 8 bytes at a time
        assert not plan(32, hidden).gluon
    assert not plan(16, 768, dtype=torch.float32, precision="tf32").gluon
    assert not plan(128, 768).gluon  # 64 rows a program: the weights stream
    assert not plan(16, 768, gluon=False).gluon
    for bad in (dict(hidden=128), dict(dtype=torch.float32, precision="tf32"), dict(block_b=64),
                dict(fast_activations=False)):
        with pytest.raises(ValueError, match="gluon is the LSTM's and GRU's forward"):
            plan(**{"batch": 16, "hidden": 768, **bad, "gluon": True})
    monkeypatch.setattr(gluon_common, "AVAILABLE", False)
    assert not plan(16, 768).gluon


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_the_gluon_forward_holds_its_weights_in_registers_up_to_three_pieces(monkeypatch, cell):
    """``Plan.reg_weights``, planned for an H100 as if this Triton had the Gluon kernels: the
    default of every Gluon forward whose h is at most three pieces of 256 (hidden up to 768), not at
    four (hidden 1024: 256 registers a thread of weights), never the backward's or a plan without
    Gluon; asked for where it cannot run, refused; asked off, off."""
    from rnnbench.ops import gluon_common

    gates = GATES[cell]

    def plan(batch, hidden, dtype=torch.bfloat16, **kwargs):
        return _plan_for_an_h100(batch, hidden, gates, dtype, **kwargs)

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for batch, hidden, dtype in ((16, 768, torch.float16), (16, 768, torch.bfloat16), (32, 768, torch.bfloat16),
                                 (32, 512, torch.bfloat16), (128, 512, torch.bfloat16), (20, 500, torch.float16),
                                 (3, 260, torch.bfloat16)):
        chosen = plan(batch, hidden, dtype)
        assert chosen.gluon and chosen.reg_weights, (batch, hidden, dtype)
        assert not plan(batch, hidden, dtype, forward_reg_weights=False).reg_weights
        assert not plan(batch, hidden, dtype, direction="backward").reg_weights
    for batch in (16, 32):
        assert plan(batch, 1024).gluon and not plan(batch, 1024).reg_weights
    assert not plan(32, 128).reg_weights and not plan(16, 768, gluon=False).reg_weights
    for bad in (dict(hidden=1024), dict(hidden=128), dict(gluon=False), dict(direction="backward")):
        with pytest.raises(ValueError, match="reg_weights is the Gluon forward's"):
            plan(**{"batch": 16, "hidden": 768, **bad, "reg_weights": True})
    monkeypatch.setattr(gluon_common, "AVAILABLE", False)
    assert not plan(16, 768).reg_weights


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_a_gluon_forward_holds_its_weights_in_registers_as_its_plan_says(monkeypatch, cell):
    """The Gluon kernel's ``REG_WEIGHTS`` as ``recurrence_forward`` launches it: the plan's
    ``reg_weights`` for a call that saves nothing; for one that saves for the backward, only up to
    two pieces of h (at three, the saving kernel spilled and the LSTM's fp16 step slowed:
    ``plans.REG_WEIGHTS_SAVING_MAX_PIECES``). (Launchers recorded: no Gluon on the CPU.)"""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import Plan

    calls = []
    monkeypatch.setattr(recurrence, f"_{cell.upper()}_FORWARD_GLUON",
                        lambda grid, args, constexprs, stream=None, keyed=None: calls.append(constexprs.values))
    gates = GATES[cell]
    for hidden, pieces in ((300, 2), (512, 2), (700, 3), (768, 3)):
        for registers in (True, False):
            forward = Plan(16, 16, True, num_warps=4, gluon=True, fast_activations=True, reg_weights=registers)
            launch = recurrence._Launch(forward, Plan(16, 16, True), "ieee", False, hidden, cell, 3)
            x_proj = torch.zeros(2, 3, gates * hidden, dtype=torch.float16)
            w_hh = torch.zeros(gates * hidden, hidden, dtype=torch.float16)
            for save in (False, True):
                calls.clear()
                recurrence.recurrence_forward(cell, x_proj, w_hh, None, None, None, None, launch, save)
                assert calls[0]["PIECES"] == pieces
                assert calls[0]["REG_WEIGHTS"] == (registers and (pieces == 2 or not save)), (hidden, registers, save)


def test_no_gluon_forward_for_the_other_cells(monkeypatch):
    """The cells without a Gluon kernel (the RNN's) never get ``Plan.gluon``, not even on the
    Gluon plan's tiles (16 units a program: the RNN's default is 64), and asking for it is
    refused."""
    from rnnbench.ops import gluon_common

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for cell in (c for c in CELLS if c not in GLUON_CELLS):
        for batch, hidden in ((16, 768), (32, 512), (3, 260)):
            for tiles in ({}, {"block_h": 16}):
                assert not _plan_for_an_h100(batch, hidden, GATES[cell], **tiles).gluon, (cell, batch, hidden, tiles)
        for tiles in ({}, {"block_h": 16}):
            with pytest.raises(ValueError, match="gluon is the LSTM's and GRU's forward"):
                _plan_for_an_h100(16, 768, GATES[cell], gluon=True, **tiles)


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_a_gluon_forward_launches_its_cells_kernel(monkeypatch, cell):
    """``recurrence_forward`` with a plan that runs Gluon (:func:`gluon_runs`) launches its cell's
    Gluon kernel once, with the cell's buffers (the GRU's: no cell state, ``saved [T, B, 4H]``),
    its compile-time flags (``HAS_C0`` the LSTM's only), fresh zeroed arrival counters and the
    step count ``ready`` when given; the other launchers are not called. (Launchers recorded: no
    Gluon on the CPU.)"""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import Plan

    calls = []

    def recorder(name):
        return lambda grid, args, constexprs, stream=None, keyed=None: calls.append((name, grid, args, constexprs))

    for name in ("_LSTM_FORWARD_GLUON", "_GRU_FORWARD_GLUON", "_LSTM_FORWARD", "_GRU_FORWARD", "_RNN_FORWARD"):
        monkeypatch.setattr(recurrence, name, recorder(name))
    T, B, H = 5, 3, 300
    gates = GATES[cell]
    forward = Plan(16, 16, True, num_warps=4, gluon=True, fast_activations=True)
    launch = recurrence._Launch(forward, Plan(16, 16, True), "ieee", False, H, cell, B)
    x_proj, w_hh = torch.zeros(T, B, gates * H, dtype=torch.float16), torch.zeros(gates * H, H, dtype=torch.float16)
    ready = torch.zeros(1, dtype=torch.int32)
    for save, ready_given in ((True, None), (False, ready)):
        calls.clear()
        h_buf, h_n, c_n, saved, c_buf = recurrence.recurrence_forward(cell, x_proj, w_hh, None, None, None, None,
                                                                      launch, save, ready=ready_given)
        assert [c[0] for c in calls] == [f"_{cell.upper()}_FORWARD_GLUON"]
        _, grid, args, constexprs = calls[0]
        flags = constexprs.values
        assert grid == (-(-H // 16), 1) and args[-2:] == (T, B) and args[0] is x_proj and args[1] is w_hh
        arrivals = args[-4]
        assert arrivals.dtype == torch.int32 and arrivals.shape == (1, ) and not arrivals.any()
        assert args[-3] is (arrivals if ready_given is None else ready)
        assert flags["SAVE"] == save and flags["AHEAD"] == (ready_given is not None) and flags["H"] == H
        assert (flags["PIECE"], flags["PIECES"], flags["BLOCK_B"]) == (256, 2, 16)
        assert ("HAS_C0" in flags) == (cell == "lstm")
        assert h_buf.shape == (T + 1, B, H) and h_n.shape == (1, B, H)
        assert (c_n is None) == (cell != "lstm") and (c_buf is None) == (cell != "lstm" or not save)
        # The kernel's order: x_proj, w_hh, b_ih, b_hh, h0, [c0,] its results, counters, ready, T, B.
        first = 5 + (cell == "lstm")
        returned = (h_buf, h_n, c_n, c_buf, saved) if cell == "lstm" else (h_buf, h_n, saved)
        assert len(args) == first + len(returned) + 4
        if save:
            assert all(a is b for a, b in zip(args[first:], returned))
            assert saved.shape == (T, B, 4 * H) and saved.dtype == torch.float32
        else:
            assert args[first] is h_buf and args[first + 1] is h_n and saved is None


def test_a_call_runs_the_gluon_kernel_only_where_it_can():
    """``recurrence.gluon_runs``: a plan with ``gluon`` runs the Gluon kernel without lengths and
    with no h0 or one on a 16-byte boundary; with lengths, an h0 2 or 8 bytes off the boundary, or
    a plan without ``gluon``, the ``tl`` kernel."""
    from rnnbench.ops.plans import Plan
    from rnnbench.ops.recurrence import gluon_runs

    gluon, tl = Plan(16, 16, True, gluon=True), Plan(16, 16, True)
    flat = torch.empty(64, dtype=torch.bfloat16)
    aligned = flat[8:16]  # 16 bytes in
    assert aligned.data_ptr() % 16 == 0
    assert gluon_runs(gluon, False, None) and gluon_runs(gluon, False, aligned)
    assert not gluon_runs(gluon, True, None)
    for off in (flat[1:9], flat[4:12]):  # 2 and 8 bytes past the boundary
        assert not gluon_runs(gluon, False, off)
    assert not gluon_runs(tl, False, None)


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_the_input_projected_ahead_where_the_gluon_forward_leaves_multiprocessors(monkeypatch, cell):
    """``Plan.input_ahead``: with the Gluon forward (the LSTM's and GRU's, both of which wait for
    the steps written), where its programs take at most half the multiprocessors (FlashRNN's 48 of
    132; batch 37, hidden 512 takes 96); by default the LSTM's alone (the GRU's measured no faster:
    ``plans.AHEAD_DEFAULT_GATES``), the GRU's when asked for; never without Gluon, nor for the
    other cells; asked for where it cannot run, refused. ``recurrence.projects_ahead``: a call
    takes it from 256 steps, on CUDA, captured in a CUDA graph, where the Gluon kernel runs (not
    with lengths)."""
    from types import SimpleNamespace

    from rnnbench.ops import gluon_common
    from rnnbench.ops.recurrence import projects_ahead

    def plan(batch, hidden, gates=GATES[cell], **override):
        return _plan_for_an_h100(batch, hidden, gates, torch.float16, **override)

    def can(batch, hidden, gates=GATES[cell], **override):
        """Whether a plan asking for input_ahead there gets it (else it is refused)."""
        try:
            return plan(batch, hidden, gates, input_ahead=True, **override).input_ahead
        except ValueError as refusal:
            assert "input_ahead is the Gluon forward's" in str(refusal)
            return False

    monkeypatch.setattr(gluon_common, "AVAILABLE", True)
    for batch, hidden in ((16, 768), (16, 1024), (3, 1024)):  # 48, 64, 64 programs
        assert can(batch, hidden) and plan(batch, hidden).input_ahead == (cell == "lstm")
    assert not can(37, 512) and not can(32, 1024)  # 32 x 3, 64 x 2 programs
    assert not can(16, 768, sms=95) and can(16, 768, sms=96)  # 48 programs
    assert not can(16, 768, direction="backward") and not plan(16, 768, direction="backward").input_ahead
    assert not can(16, 768, gluon=False) and not plan(16, 768, gluon=False).input_ahead
    for other in (c for c in CELLS if c not in GLUON_CELLS):
        assert not plan(16, 768, GATES[other]).input_ahead and not can(16, 768, GATES[other])
    assert not plan(16, 768, input_ahead=False).input_ahead
    ahead = plan(16, 768, input_ahead=True)
    x = SimpleNamespace(is_cuda=True, shape=(256, 16, 768))
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    assert not projects_ahead(ahead, x, None, None)  # eager
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    assert projects_ahead(ahead, x, None, None)
    assert not projects_ahead(ahead, SimpleNamespace(is_cuda=True, shape=(255, 16, 768)), None, None)
    assert not projects_ahead(ahead, SimpleNamespace(is_cuda=False, shape=(256, 16, 768)), None, None)
    assert not projects_ahead(ahead, x, torch.full((16,), 256), None)  # lengths: the tl kernel
    assert not projects_ahead(plan(16, 768, input_ahead=False), x, None, None)
    monkeypatch.setattr(gluon_common, "AVAILABLE", False)
    assert not plan(16, 768).input_ahead and not can(16, 768)


def test_fast_activations_where_the_products_round_as_coarsely():
    """The MUFU's tanh (relative error about 2^-11) in the forward of bf16, fp16 and TF32, never
    in strict fp32, never backward, never under the interpreter (inline PTX); and the forward
    kernel is told so."""
    from rnnbench.ops.plans import choose_plan
    from rnnbench.ops.recurrence import _Launch

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    for dtype, precision, fast in ((torch.bfloat16, "ieee", True), (torch.float16, "ieee", True),
                                   (torch.float32, "tf32", True), (torch.float32, "tf32x3", False),
                                   (torch.float32, "ieee", False)):
        for hidden in (100, 512):  # on chip and exchanged
            for gates in (1, 4):
                forward, backward = (choose_plan(20, hidden, gates, dtype, cuda, multiprocessors=132,
                                                 precision=precision, direction=d) for d in ("forward", "backward"))
                assert (forward.fast_activations, backward.fast_activations) == (fast, False), (dtype, precision)
                launch = _Launch(forward, backward, precision, False, hidden, {1: "rnn_tanh", 4: "lstm"}[gates], 20)
                assert launch.forward_meta["FAST_ACT"] == fast and "FAST_ACT" not in launch.backward_meta
        assert not choose_plan(20, 100, 1, dtype, cpu, precision=precision).fast_activations
    exact = choose_plan(20, 100, 1, torch.bfloat16, cuda, multiprocessors=132, fast_activations=False)
    assert not exact.fast_activations
    with pytest.raises(ValueError, match="fast_activations needs CUDA"):
        choose_plan(3, 37, 1, torch.bfloat16, cpu, fast_activations=True)


def test_refusals_are_one_line():
    from rnnbench.ops.recurrence import recurrent_layer, refusal

    assert refusal("lstm", 3, 37, torch.float32, torch.device("cpu")) is None
    assert "dtype" in refusal("lstm", 3, 37, torch.float64, torch.device("cpu"))
    assert "cell" in refusal("mgu", 3, 37, torch.float32, torch.device("cpu"))
    with pytest.raises(ValueError, match="cannot run this call: dtype"):
        recurrent_layer("gru", *[None if t is None else t.double() for t in make_layer("gru", (1, 1, 3, 37))])


def test_floor_kernels_run_as_one_program():
    from rnnbench.ops.floor import barrier_check, barrier_floor, dot_floor

    assert barrier_floor(1, 5, "cpu").item() == 5
    assert barrier_check(1, 5, "cpu") == 0
    gen = torch.Generator().manual_seed(0)
    h_buf = torch.zeros(4, 3, 37)
    h_buf[0] = torch.randn(3, 37, generator=gen)
    w = torch.randn(37, 37, generator=gen) * 37 ** -0.5
    dot_floor(h_buf, w, block_h=64)
    expected = h_buf[0].double()
    for t in range(3):
        expected = expected @ w.double().T
        assert relative_error(h_buf[t + 1], expected) < 1e-5
    # With four gates' rows (the LSTM's stacked tile) it keeps the first gate's block.
    w4 = torch.randn(4 * 37, 37, generator=gen) * 37 ** -0.5
    for resident in (True, False):
        dot_floor(h_buf, w4, block_h=64, resident=resident, block_k=16)
        expected = h_buf[0].double()
        for t in range(3):
            expected = expected @ w4[:37].double().T
            assert relative_error(h_buf[t + 1], expected) < 1e-5


@pytest.mark.parametrize("gates", [1, 4])
def test_chain_floor_runs_the_on_chip_step(gates):
    """The on-chip floor computes h_{t+1} = tanh(first gate of h_t W^T + x_t) whichever way its
    parts are switched: input one or two steps ahead, every h_t stored or only the last."""
    from rnnbench.ops.floor import chain_floor

    gen = torch.Generator().manual_seed(1)
    T, B, H = 5, 3, 37
    w = torch.randn(gates * H, H, generator=gen) * H ** -0.5
    x = torch.randn(T, B, H, generator=gen)
    start = torch.randn(B, H, generator=gen)
    expected = [start.double()]
    for t in range(T):
        expected.append(torch.tanh(expected[-1] @ w[:H].double().T + x[t].double()))
    for x_ahead in (1, 2):
        for store in (True, False):
            h_buf = torch.zeros(T + 1, B, H)
            h_buf[0] = start
            chain_floor(h_buf, w, x, act=1, x_ahead=x_ahead, store=store)
            checked = range(1, T + 1) if store else [T]
            for t in checked:
                assert relative_error(h_buf[t], expected[t]) < 1e-5, (x_ahead, store, t)
    with pytest.raises(ValueError, match="x_ahead"):
        chain_floor(h_buf, w, x, x_ahead=3)


def uninterpreted(*args: str):
    """``python *args`` in a process of its own whose kernels are not interpreted (this one's are),
    ``src`` on its path: for compiling them for sm_90 without a GPU. Skips without Triton's
    NVIDIA backend. Returns the CompletedProcess (text)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("triton.backends.nvidia")
    src = Path(__file__).resolve().parents[2] / "src"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)


def test_kernels_compile_for_h100():
    """The real compiler (front end, optimiser, ptxas) accepts every kernel for sm_90, in a process
    of its own since this one interprets them."""
    proc = uninterpreted("-m", "rnnbench.ops.aot", "--quick")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from rnnbench.ops.aot import GRADIENT_VARIANTS, PRODUCT_VARIANTS, QUICK_SHAPES, SPLIT_VARIANTS

    # forward and backward of each shape, with and without lengths; the gradients' kernel in each
    # variant, masked and unmasked (EVEN); the split products' line maxima and split of each
    # variant of operands, and their products
    kernels = 4 * len(QUICK_SHAPES) + 2 * len(GRADIENT_VARIANTS) + 2 * len(SPLIT_VARIANTS) + len(PRODUCT_VARIANTS)
    assert proc.stdout.count("-lengths ") == 2 * len(QUICK_SHAPES), proc.stdout
    assert proc.stdout.count("ok    gradients-") == 2 * len(GRADIENT_VARIANTS), proc.stdout
    assert proc.stdout.count("-even {") == len(GRADIENT_VARIANTS) + sum(k.endswith("-even") for k in PRODUCT_VARIANTS), proc.stdout
    for kernel in [f"{k}-{v}" for v in SPLIT_VARIANTS for k in ("line-max", "split")] + list(PRODUCT_VARIANTS):
        assert f"ok    {kernel} {{" in proc.stdout, proc.stdout
    assert proc.stdout.count("ok ") == kernels, proc.stdout
    # No register spills on these plans (local memory in a per-step loop costs microseconds).
    assert proc.stdout.count("'stack': 0,") == kernels, proc.stdout
    # The MUFU's tanh exactly in the forward kernels whose plan asks for fast activations.
    lines = [line for line in proc.stdout.splitlines() if line.startswith("ok ") and "gradients-" not in line]
    assert any(" fast=1 " in line for line in lines) and any(" fast=0 " in line for line in lines)
    for line in lines:
        assert (" fast=1 " in line) == ("'mufu_tanh': 0" not in line), line


# Default plans that asked for more shared memory than an H100 or H200 block has (227 KB), each
# an OutOfResources at launch on the H200 (benchmarks/coverage.py, results/h200/coverage): streamed
# forwards at 128 units a program (16-bit, and TF32's on fp16 operands) and strict fp32's at 64
# (its 3xFP16 copies); and backwards they hid (compiled, results/h200/coverage/aot): split-K in TF32,
# the gate split at 256 units, and strict fp32's split-K at 128 units, which compiled at 256 KB
# however narrow its chunks (now the transpose plan's).
_OVERFLOWED = [("lstm", 1024, 650, "bfloat16", "ieee"), ("lstm", 1, 5000, "float32", "tf32x3"),
               ("gru", 1024, 650, "float32", "tf32"), ("gru", 1024, 1500, "float32", "tf32"),
               ("lstm", 1024, 650, "float32", "tf32x3")]
_SHARED = """
import json, sys
import torch
from rnnbench.ops.aot import variant_usage
found = [[cell, batch, hidden, direction,
          variant_usage(cell, direction, getattr(torch, dtype), batch, hidden, precision, {}, {})[1]["shared"]]
         for cell, batch, hidden, dtype, precision in json.loads(sys.argv[1]) for direction in ("forward", "backward")]
print(json.dumps(found))
"""


def test_streamed_plans_fit_in_shared_memory_compiled():
    """Each default plan of :data:`_OVERFLOWED`, both ways, compiled for sm_90 (no GPU needed):
    its shared memory within the H100's and H200's block (what Triton checks at launch)."""
    import json

    from rnnbench.ops.plans import H100_SHARED_MEMORY

    proc = uninterpreted("-c", _SHARED, json.dumps(_OVERFLOWED))
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    assert len(found) == 2 * len(_OVERFLOWED)
    over = [row for row in found if row[-1] > H100_SHARED_MEMORY]
    assert not over, over


def test_a_streamed_plan_asked_too_wide_is_refused():
    """Chunks asked for (``block_k``, ``num_stages``) are kept as asked, the other fitted to them,
    and refused in one line where they cannot fit; the default narrows them."""
    from rnnbench.ops.plans import choose_plan

    def plan(**override):
        return choose_plan(1024, 650, 4, torch.bfloat16, torch.device("cuda"), multiprocessors=132, **override)

    assert (plan().block_k, plan().num_stages) == (32, 4)  # (64 wide: 288 KB)
    assert plan(num_stages=2).block_k == 64  # (asked: as asked, and it fits)
    assert plan(block_k=64).num_stages == 2
    assert plan(block_k=16, num_stages=6).num_stages == 6
    with pytest.raises(ValueError, match="4 chunks 64 wide in flight do not fit in shared memory at batch_size "
                                         "1024, hidden_size 650"):
        plan(block_k=64, num_stages=4)


def test_split_k_gives_way_where_its_gate_gradients_cannot_fit():
    """Split-K stages its program's fp32 tile of gate gradients (split in two for 3xTF32): at 64
    batch rows and 128 units a program (batch 1024, hidden 650) strict fp32's took 256 KB whatever
    its chunks, so the backward there is the transpose plan; at batch 128 split-K as before, and
    asked for, refused in one line."""
    from rnnbench.ops.plans import choose_plan

    def plan(batch, precision="tf32x3", **override):
        return choose_plan(batch, 650, 4, torch.float32, torch.device("cuda"), multiprocessors=132,
                           precision=precision, direction="backward", **override)

    assert plan(128).split_k and plan(1024, "tf32").split_k
    wide = plan(1024)
    assert not wide.split_k and not wide.w_resident and wide.block_h == 128
    with pytest.raises(ValueError, match="do not fit in shared memory at batch_size 1024, hidden_size 650"):
        plan(1024, split_k=True)


def test_float32_follows_the_matmul_switch_not_cudnns_rnn_switch(monkeypatch):
    """Issue 8's rule: TF32 where ``torch.backends.cuda.matmul.allow_tf32`` allows it, whatever
    cuDNN's switch (which torch.nn's recurrent layers follow, on by default): with torch's defaults
    (cuDNN on, matmul off) a float32 recurrence is strict, and TF32 with matmul on and cuDNN off
    (``benchmarks/results/h200/fp32-defaults``)."""
    from rnnbench.ops import plans
    from rnnbench.ops.plans import dot_precision

    monkeypatch.setattr(plans, "INTERPRET", False)
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        for matmul, cudnn, expected in ((False, True, "tf32x3"), (True, False, "tf32")):
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn
            assert dot_precision(torch.float32) == expected, (matmul, cudnn)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def test_strict_fp32_runs_as_3xtf32_on_cuda_unless_asked_for_ieee(monkeypatch):
    """Which products a float32 recurrence gets on CUDA (planned without a GPU): TF32 where torch
    allows it, else 3xTF32 by default or IEEE under ``strict_fp32("ieee")``; half types and the
    interpreter are unaffected."""
    from rnnbench.ops import plans, recurrence
    from rnnbench.ops.plans import dot_precision
    from rnnbench.precision import matmul_mode

    monkeypatch.setattr(plans, "INTERPRET", False)
    with matmul_mode("fp32"):
        assert dot_precision(torch.float32) == "tf32x3"
        assert dot_precision(torch.float32, recurrence._STRICT_FP32.get()) == "tf32x3"
        with recurrence.strict_fp32("ieee"):
            assert dot_precision(torch.float32, recurrence._STRICT_FP32.get()) == "ieee"
        assert dot_precision(torch.bfloat16) == "ieee"
    with matmul_mode("tf32"):
        assert dot_precision(torch.float32) == "tf32"
    with pytest.raises(ValueError, match="unknown strict fp32 mode"):
        with recurrence.strict_fp32("tf32"):
            pass
    monkeypatch.setattr(plans, "INTERPRET", True)
    with matmul_mode("fp32"):
        assert dot_precision(torch.float32) == "ieee"

