"""On a CUDA device: the real multi-program kernels. The grid barrier orders every program; one
layer on 1 to 64+ programs (resident and streamed weights) matches the float64 reference in
fp32, tf32, bf16 and fp16; the drop-in modules match torch.nn (cuDNN); the ``triton`` lane passes
the engine's verification.

Skipped (and only collected) where no GPU is visible, or where this process imported the kernels
interpreted. Run on a GPU machine with ``pytest -m cuda tests/ops``.
"""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch

pytestmark = pytest.mark.cuda

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

from rnnbench.ops import common  # noqa: E402

if common.INTERPRET:
    pytest.skip("the kernels were imported interpreted (TRITON_INTERPRET=1)", allow_module_level=True)

from rnnbench import nn as rnn  # noqa: E402
from rnnbench import runner  # noqa: E402
from rnnbench.cases import CELLS, Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.ops.launch import COUNTERS  # noqa: E402
from rnnbench.ops.floor import barrier_check, barrier_floor  # noqa: E402
from rnnbench.ops.naive import naive_layer  # noqa: E402
from rnnbench.ops.recurrence import STRICT_FP32_MODES, plan, plan_override, recurrent_layer, strict_fp32  # noqa: E402
from rnnbench.precision import device_supports, matmul_mode, tolerance  # noqa: E402
from rnnbench.results import ResultsFile  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402
from rnnbench.workload import graphed  # noqa: E402

from test_recurrence import padded_and_unpadded  # noqa: E402

_REGISTERED = "triton" in LANES
from rnnbench.lanes.triton import make_lane  # noqa: E402  (registers the lane)

if not _REGISTERED:  # registering is lanes/__init__'s job; leave LANES as the other tests expect it
    LANES.pop("triton", None)

DTYPES = [d for d in ("fp32", "tf32", "bf16", "fp16") if device_supports("cuda", d) is None]
TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
SMS = torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.parametrize("programs", sorted({1, 2, 16, 64, SMS}))
def test_barrier_orders_every_program(programs):
    assert barrier_floor(programs, 100, "cuda").item() == programs * 100
    assert barrier_check(programs, 500, "cuda") == 0


def _layer(cell, b, t, i, h, seed=0):
    gen = torch.Generator().manual_seed(seed)
    g, bound = GATES[cell], h ** -0.5
    u = lambda *s: (torch.rand(s, generator=gen) * 2 - 1) * bound  # noqa: E731
    return [torch.randn(t, b, i, generator=gen), torch.randn(b, h, generator=gen) * 0.5,
            torch.randn(b, h, generator=gen) * 0.5 if cell == "lstm" else None,
            u(g * h, i), u(g * h, h), u(g * h), u(g * h)]


def _loss_weights(outputs):
    """Random float64 weights, one tensor per output (the same for every call): the loss weighs
    every output position."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    return [torch.randn(o.shape, generator=gen, device="cuda", dtype=torch.float64) for o in outputs]


def _outputs_and_grads(fn, cell, tensors, dtype, lengths=None):
    leaves = [None if x is None else x.to("cuda", dtype).requires_grad_() for x in tensors]
    out = [o for o in fn(cell, *leaves, lengths=lengths) if o is not None]
    loss = sum((o.double() * w).sum() for o, w in zip(out, _loss_weights(out)))
    return out + list(torch.autograd.grad(loss, [x for x in leaves if x is not None]))


def check_layer(cell, dtype, tensors, lengths=None):
    """The layer on the kernels against the naive one in float64 (``lengths``: a variable-length
    batch, ``[B]`` on the CPU); the loss weighs every output position, padded ones too."""
    with matmul_mode(dtype):
        got = _outputs_and_grads(recurrent_layer, cell, tensors, TORCH_DTYPE[dtype], lengths)
    rounded = [None if x is None else x.to(TORCH_DTYPE[dtype]) for x in tensors]
    ref = _outputs_and_grads(naive_layer, cell, rounded, torch.float64,
                             None if lengths is None else lengths.to("cuda"))
    tol = tolerance(cell, dtype)
    for k, (a, b) in enumerate(zip(got, ref)):
        err = relative_error(a, b)
        assert err <= tol, f"tensor {k}: relative error {err:.3g} > {tol:g}"


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("block_h", [4, 16, 64])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_layer_on_many_programs(cell, dtype, block_h, resident, nan_buffers):
    """hidden 100 over 25, 7 or 2 programs, batch 20 over two batch blocks of 16; afterwards every
    barrier counter is back at zero (the kernels reuse them without a memset). Every float buffer
    starts as NaN: one read before it is written shows (fp16's padded h at 4 units a program did,
    by chance of what memory held, before ``plans.padded_units_covered``)."""
    with plan_override(block_h=block_h, block_b=16, w_resident=resident):
        check_layer(cell, dtype, _layer(cell, 20, 9, 5, 100))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("pieces", [2, 8, 1])
@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_forward_in_slices_on_the_gpu(cell, dtype, lengths, pieces, nan_buffers):
    """The LSTM's and GRU's streamed forward in slices of units (``Plan.pieces``,
    ops/<cell>/pieces.py) at batch 512, hidden 1024 (16 programs of 64 units x 8 batch blocks of 64
    rows) in 2 slices of 32 units and 8 of 8, and whole (the control; TF32 on its own operands,
    asked pieces meaning them): output, final states and every gradient against float64, each
    sequence its own length or not; the counters left at zero."""
    lengths = torch.randint(0, 10, (512,), generator=torch.Generator().manual_seed(2)) if lengths else None
    with plan_override(forward_pieces=pieces):
        got = plan(cell, 512, 1024, TORCH_DTYPE[dtype], torch.device("cuda"), "tf32" if dtype == "tf32" else "ieee")
        assert got.pieces == pieces and not (got.w_resident or got.half_operands), got
        check_layer(cell, dtype, _layer(cell, 512, 9, 64, 1024), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("wide", [True, False], ids=["128-rows", "64-rows"])
@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
def test_tf32_lstm_forward_in_slices_by_default(lengths, wide, nan_buffers):
    """TF32's LSTM at batch 1024, hidden 2048 on its own fp32 operands in 2 slices, not fp16
    operands whole: its default plan (``plans.wide_rows_default``: 128 rows and 128 units a
    program, 16 x 8 programs) and, 64 rows asked, the plan before (``plans.PIECE_ACCUMULATOR_TF32``:
    256 units, 8 x 16): output, final states and every gradient against float64; the counters
    left at zero."""
    with plan_override(**({} if wide else {"forward_block_b": 64})):
        got = plan("lstm", 1024, 2048, torch.float32, torch.device("cuda"), "tf32")
        assert (got.pieces, got.half_operands, got.block_h, got.block_b) == (2, False, *((128, 128) if wide else
                                                                                         (256, 64))), got
        lengths = torch.randint(0, 6, (1024,), generator=torch.Generator().manual_seed(3)) if lengths else None
        check_layer("lstm", "tf32", _layer("lstm", 1024, 5, 64, 2048), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_wide_rows_forward_by_default(cell, dtype, lengths, nan_buffers):
    """16-bit at batch 1024, hidden 1024, with fp32 gates saved asked, then the default plan
    (``plans.wide_rows_default``: 128 rows and 64 units a program in 2 slices of 32, 16 x 8 programs;
    the gates saved in the weights' dtype, ``Plan.half_saved``), one after the other in one process
    (the same compile-time arguments: the launch must not reuse the other's kernel): output, final
    states and every gradient against float64, each sequence its own length or not; the counters
    left at zero."""
    lengths = torch.randint(0, 6, (1024,), generator=torch.Generator().manual_seed(4)) if lengths else None
    for half_saved in (False, True):
        with plan_override(**({} if half_saved else {"forward_half_saved": False})):
            got = plan(cell, 1024, 1024, TORCH_DTYPE[dtype], torch.device("cuda"))
            assert (got.block_b, got.block_h, got.pieces, got.half_saved) == (128, 64, 2, half_saved), got
            check_layer(cell, dtype, _layer(cell, 1024, 5, 64, 1024), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "fp32"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_forward_in_slices_across_many_programs(cell, dtype):
    """Hidden 100 over 7 programs of 16 units in 4 slices of 4, batch 20 in two batch blocks; TF32
    on its own products and 16 bits on unpadded rows (slices take no copies of their own)."""
    with plan_override(block_h=16, block_b=16, w_resident=False, h_on_chip=False, forward_pieces=4,
                       forward_pad_rows=False):
        check_layer(cell, dtype, _layer(cell, 20, 9, 5, 100))


@pytest.mark.parametrize("gate_split", [False, True], ids=["transpose", "gate-split"])
@pytest.mark.parametrize("pieces", [2, 4])
@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_backward_in_slices_on_the_gpu(cell, dtype, lengths, pieces, gate_split, nan_buffers):
    """The LSTM's and GRU's reverse recurrence with its cell gradients in slices (``Plan.pieces``
    of the backward, ops/<cell>/pieces.py) at batch 512 (8 batch blocks of 64 rows), hidden 1024
    for the LSTM and 768 for the GRU (16 and 12 programs of 64 units a batch block: the GRU's gate
    split takes groups of 3), in 2 and 4 slices, its product as one or in gate partials: output,
    final states and every gradient against float64, each sequence its own length or not; the
    counters left at zero."""
    hidden = 1024 if cell == "lstm" else 768
    lengths = torch.randint(0, 10, (512,), generator=torch.Generator().manual_seed(3)) if lengths else None
    # (split-K off: the GRU's plan there, which takes no slices)
    with plan_override(backward_pieces=pieces, backward_gate_split=gate_split, backward_split_k=False):
        got = plan(cell, 512, hidden, TORCH_DTYPE[dtype], torch.device("cuda"), direction="backward")
        assert (got.pieces, bool(got.gate_split), got.split_k, got.w_resident) == (pieces, gate_split, False,
                                                                                   False), got
        check_layer(cell, dtype, _layer(cell, 512, 9, 64, hidden), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("dtype", ["tf32", "bf16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_backward_in_slices_at_128_rows(cell, dtype, lengths, nan_buffers):
    """The reverse recurrence in slices at 128 batch rows and 64 units a program (asked for: the
    default takes 128 rows from 128 units a program, ``plans.wide_rows_backward_default``), batch 512,
    hidden 1024, 2 slices: output, final states and every gradient against float64; the counters
    left at zero."""
    lengths = torch.randint(0, 10, (512,), generator=torch.Generator().manual_seed(5)) if lengths else None
    with plan_override(backward_block_b=128, backward_block_h=64, backward_pieces=2, backward_split_k=False,
                       backward_gate_split=False):
        got = plan(cell, 512, 1024, TORCH_DTYPE[dtype], torch.device("cuda"), "tf32" if dtype == "tf32" else "ieee",
                   direction="backward")
        assert (got.block_b, got.block_h, got.pieces, got.split_k, got.gate_split) == (128, 64, 2, False, 0), got
        check_layer(cell, dtype, _layer(cell, 512, 9, 64, 1024), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("dtype", ["tf32", "bf16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_wide_rows_both_ways_by_default(cell, dtype, lengths, nan_buffers):
    """Batch 1024, hidden 1536 on the default plans: forward at 128 rows and 128 units a program in 2
    slices (``plans.wide_rows_default``; TF32's GRU too, on its own operands, not fp16's whole) and
    backward at 128 rows and 128 units in 4 slices (``plans.wide_rows_backward_default``), 12 x 8
    programs each: output, final states and every gradient against float64, each sequence its own
    length or not; the counters left at zero."""
    precision = "tf32" if dtype == "tf32" else "ieee"
    plans = [plan(cell, 1024, 1536, TORCH_DTYPE[dtype], torch.device("cuda"), precision, direction=direction)
             for direction in ("forward", "backward")]
    assert [(p.block_b, p.block_h, p.pieces, p.half_operands, p.gate_split, p.split_k) for p in plans] == [
        (128, 128, 2, False, 0, False), (128, 128, 4, False, 0, False)], plans
    lengths = torch.randint(0, 6, (1024,), generator=torch.Generator().manual_seed(6)) if lengths else None
    check_layer(cell, dtype, _layer(cell, 1024, 5, 64, 1536), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("lengths", [False, True], ids=["same-lengths", "lengths"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_strict_fp32_in_slices_by_default(cell, lengths, nan_buffers):
    """Strict fp32 at batch 1024, hidden 2048 on the default plans: forward with 3xTF32 in the step, no
    split copies, in 4 slices (``plans.x3_pieces_default``) and backward in 4 slices without the gate
    split (``plans.backward_sliced``), 8 x 16 programs each: output, final states and every gradient
    against float64, each sequence its own length or not; the counters left at zero."""
    plans = [plan(cell, 1024, 2048, torch.float32, torch.device("cuda"), "tf32x3", direction=direction)
             for direction in ("forward", "backward")]
    assert [(p.block_b, p.block_h, p.pieces, p.split_once, p.gate_split) for p in plans] == [
        (64, 256, 4, False, 0), (64, 256, 4, False, 0)], plans
    lengths = torch.randint(0, 6, (1024,), generator=torch.Generator().manual_seed(7)) if lengths else None
    check_layer(cell, "fp32", _layer(cell, 1024, 5, 64, 2048), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_backward_in_slices_across_many_programs(cell):
    """Hidden 100 over 7 programs of 16 units in 2 slices of 8, batch 20 in two batch blocks, bf16."""
    with plan_override(block_h=16, block_b=16, w_resident=False, h_on_chip=False, split_k=False,
                       backward_pieces=2):
        check_layer(cell, "bf16", _layer(cell, 20, 9, 5, 100))


# Plans a variable-length batch meets: the default; h exchanged across 7 programs (weights
# resident or streamed, split-K or transpose backward); the on-chip plan forced where it fits.
LENGTH_PLANS = {"default": {}, "exchange": dict(block_h=16, h_on_chip=False),
                "streamed": dict(block_h=16, w_resident=False, h_on_chip=False),
                "transpose": dict(block_h=16, h_on_chip=False, split_k=False), "on_chip": dict(h_on_chip=True)}


@pytest.mark.parametrize("plan_name", list(LENGTH_PLANS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_variable_lengths_on_the_gpu(cell, dtype, plan_name):
    """Each of 20 sequences (two batch blocks) its own length, 0 to 9 steps: output zero past each
    end with its gradient ignored, each sequence's own final states, every gradient; at hidden 100
    (37 for the forced on-chip plan of the LSTM and GRU, whose tiles hold 32 units)."""
    fields = LENGTH_PLANS[plan_name]
    if "split_k" in fields and cell not in ("lstm", "gru"):
        pytest.skip("the RNN has the transpose backward only")
    hidden = 20 if plan_name == "on_chip" and cell in ("lstm", "gru") else 100
    lengths = torch.tensor([9, 0, 3, 9, 1, 5, 7, 2, 9, 4, 6, 8, 1, 3, 5, 7, 9, 2, 4, 6])
    with plan_override(**fields):
        check_layer(cell, dtype, _layer(cell, 20, 9, 5, hidden), lengths)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("dtype", ["tf32", "bf16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_variable_lengths_at_a_benchmark_size(cell, dtype):
    """The ``varlen`` suite's width (batch 64, hidden 512: split-K backward over 32 programs), lengths
    10 to 60 padded to 60."""
    lengths = torch.randint(10, 61, (64,), generator=torch.Generator().manual_seed(5))
    check_layer(cell, dtype, _layer(cell, 64, 60, 64, 512), lengths)


@pytest.mark.parametrize("how", ["packed", "lengths"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("cell", CELLS)
def test_packed_modules_match_torch_nn_on_cuda(cell, dtype, how):
    """A PackedSequence (unsorted, 2 layers, both directions, hx given) through torch.nn (cuDNN)
    and through rnnbench.nn, packed too or padded with ``lengths=``, on the same weights: the
    packing, output data, final states, every gradient."""
    from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

    ours_cls, theirs_cls, extra = MODULES[cell]
    torch.manual_seed(0)
    theirs = theirs_cls(48, 96, num_layers=2, bidirectional=True, **extra).to("cuda", TORCH_DTYPE[dtype])
    ours = ours_cls(48, 96, num_layers=2, bidirectional=True, **extra).to("cuda", TORCH_DTYPE[dtype])
    ours.load_state_dict(theirs.state_dict())
    seqs = [torch.randn(n, 48, device="cuda", dtype=TORCH_DTYPE[dtype]) for n in (17, 40, 3, 40, 26, 1)]
    shape = (4, len(seqs), 96)
    hx = [torch.randn(shape, device="cuda", dtype=TORCH_DTYPE[dtype]) * 0.5 for _ in range(2 if cell == "lstm" else 1)]
    results = []
    with matmul_mode(dtype), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # auto on CUDA takes the kernels: no fallback warning
        for module in (theirs, ours):
            xs = [s.clone().requires_grad_() for s in seqs]
            states = [h.clone().requires_grad_() for h in hx]
            packed = pack_sequence(xs, enforce_sorted=False)
            hx_in = tuple(states) if cell == "lstm" else states[0]
            if module is ours and how == "lengths":
                padded, lengths = pad_packed_sequence(packed)
                out, finals = module(padded, hx_in, lengths)
                out = torch.nn.utils.rnn.pack_padded_sequence(out, lengths, enforce_sorted=False)
            else:
                out, finals = module(packed, hx_in)
            finals = list(finals) if cell == "lstm" else [finals]
            loss = out.data.float().pow(2).sum() + sum(f.float().sum() for f in finals)
            grads = torch.autograd.grad(loss, [*xs, *states, *module.parameters()])
            results.append([out.sorted_indices, out.data, *finals, *grads])
    assert torch.equal(results[0][0], results[1][0])
    tol = 2 * tolerance(cell, dtype)  # both sides round differently
    for k, (a, b) in enumerate(zip(results[0][1:], results[1][1:])):
        assert relative_error(b, a) <= tol, (k, relative_error(b, a))


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_modules_inside_a_compiled_model_on_cuda(mode):
    """torch.compile (inductor; and its CUDA graphs under ``reduce-overhead``) of a model holding
    an rnnbench.nn.LSTM in bf16 on the kernels (``backend="triton"``: no fallback): the output and
    every gradient of the model uncompiled, call after call."""
    torch.manual_seed(0)
    embed, recurrent, head = torch.nn.Embedding(50, 64), rnn.LSTM(64, 96, num_layers=2, backend="triton"), \
        torch.nn.Linear(96, 50)
    params = list(torch.nn.ModuleList([embed, recurrent, head]).to("cuda", torch.bfloat16).parameters())

    def run(tokens):  # a tagger: embedding -> ours -> linear
        output, _ = recurrent(embed(tokens))
        return head(output)

    torch._dynamo.reset()
    compiled = torch.compile(run, mode=mode)
    for seed in range(3):  # reduce-overhead records its graph on a later call
        tokens = torch.randint(0, 50, (33, 8), device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        got = compiled(tokens)
        got_grads = torch.autograd.grad(got.float().pow(2).sum(), params)
        got = got.clone()
        want = run(tokens)
        want_grads = torch.autograd.grad(want.float().pow(2).sum(), params)
        for k, (a, b) in enumerate(zip([got, *got_grads], [want, *want_grads])):
            assert relative_error(a, b) <= tolerance("lstm", "bf16"), (seed, k, relative_error(a, b))


def test_auto_runs_cudnn_where_it_was_measured_faster(monkeypatch):
    """ops/preference.py's rule through the module: the bf16 LSTM at batch 1024, hidden 1024 (0.78x
    cuDNN's speed training on the H200 before the backward's slices, 1.00x since the 128-row forward:
    the rule's band) trains on torch.nn's path under ``backend="auto"``, said once,
    with torch.nn's exact output; forward only (ours 1.04-1.37x) it runs our kernels, silently; so does
    ``backend="triton"`` training, and strict fp32 training (ours 1.3x and more there)."""
    monkeypatch.setattr(rnn, "_WARNED", set())
    torch_paths = []
    real = rnn.LSTM._torch_forward
    monkeypatch.setattr(rnn.LSTM, "_torch_forward", lambda self, *a: torch_paths.append(self) or real(self, *a))
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(64, 1024).to("cuda")
    x = torch.randn(3, 1024, 64, device="cuda")
    with matmul_mode("fp32"):
        want32 = theirs(x)[0]
        strict = rnn.LSTM(64, 1024).to("cuda")
        strict.load_state_dict(theirs.state_dict())
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (no fallback said)
            got32 = strict(x)[0]
    assert torch_paths == [] and relative_error(got32, want32) < tolerance("lstm", "fp32")
    theirs, x = theirs.to(torch.bfloat16), x.to(torch.bfloat16)
    want = theirs(x)[0]
    auto, forced = (rnn.LSTM(64, 1024, backend=b).to("cuda", torch.bfloat16) for b in ("auto", "triton"))
    for module in (auto, forced):
        module.load_state_dict(theirs.state_dict())
    with pytest.warns(RuntimeWarning, match="cuDNN trains faster in bf16.*PyTorch's own path"):
        got = auto(x)[0]
    assert torch_paths == [auto] and got.grad_fn is not None and torch.equal(got, want)
    with warnings.catch_warnings():
        # Errors on our fallback's warning alone: torch.nn's own bf16 path warns (a UserWarning)
        # that its weights are not one contiguous chunk.
        warnings.simplefilter("error", RuntimeWarning)
        auto(x)  # (said once)
        with torch.no_grad():
            forward_only = auto(x)[0]
        trained = forced(x)[0]
        trained.float().sum().backward()
    assert torch_paths == [auto, auto], "forward only, and backend='triton', run our kernels"
    for out in (forward_only, trained):
        assert relative_error(out, want) < tolerance("lstm", "bf16")
    assert forced.weight_hh_l0.grad is not None


REPLAYED_MODULES = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN, "rnn_relu": rnn.RNN}
# Past hidden 128 the layer runs on tensor cores (streamed or resident weights, a grid barrier a
# step): glample's hidden 500, theano's 512, and an odd hidden whose biases may sit off 16 bytes.
# Forwards in every dtype (the 16-bit LSTM's and GRU's are Gluon kernels, whose counters are a
# slice of a pool, ``launch.counted_counters``: each replayed call takes a fresh one); training in
# fp32 and TF32 only, as 16-bit backwards there do work outside our launches (cuBLAS' products).
TENSOR_CORE_SIZES = [("lstm", 20, 500, 100), ("gru", 32, 512, 512), ("rnn_tanh", 3, 257, 37), ("rnn_tanh", 20, 500, 100)]
TENSOR_CORE_DTYPES = [d for d in ("fp32", "tf32") if d in DTYPES]


def _replayed_cases(every_dtype: list, fp32_and_tf32: list) -> list:
    """``(cell, batch, hidden, input_size, dtype)``: each size of ``every_dtype`` in every dtype,
    each of ``fp32_and_tf32`` in :data:`TENSOR_CORE_DTYPES`."""
    return ([(*size, d) for size in every_dtype for d in DTYPES]
            + [(*size, d) for size in fp32_and_tf32 for d in TENSOR_CORE_DTYPES])


def _module(cell, input_size, hidden, bias, dtype):
    kwargs = {"nonlinearity": cell[4:]} if cell.startswith("rnn") else {}
    torch.manual_seed(0)
    return REPLAYED_MODULES[cell](input_size, hidden, bias=bias, backend="triton", **kwargs).to("cuda",
                                                                                              TORCH_DTYPE[dtype])


def _call_inputs(cell, batch, input_size, hidden, dtype, states, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = TORCH_DTYPE[dtype]
    x = torch.randn(7, batch, input_size, generator=gen, device="cuda").to(dt)
    if not states:
        return x, None
    h0 = (torch.randn(1, batch, hidden, generator=gen, device="cuda") * 0.5).to(dt)
    return x, ((h0, (torch.randn_like(h0, dtype=torch.float32) * 0.5).to(dt)) if cell == "lstm" else h0)


def _flat(result):
    output, finals = result
    return [output, *(finals if isinstance(finals, tuple) else (finals,))]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("states", [True, False])
@pytest.mark.parametrize("cell, batch, hidden, input_size, dtype", _replayed_cases(
    [("lstm", 32, 128, 128), ("gru", 3, 37, 100), ("rnn_tanh", 20, 100, 100), ("rnn_relu", 1, 64, 37),
     ("gru", 128, 128, 128), ("lstm", 5, 100, 3), *TENSOR_CORE_SIZES], []))
def test_an_eager_forward_is_replayed(cell, batch, hidden, input_size, dtype, states, bias):
    """Under no_grad, a module's first eager forward of a shape (on FMA units, or on tensor cores
    past hidden 128: ``TENSOR_CORE_SIZES``) is recorded and the next ones replay its launches
    (``ops/replay.py``): the replay must be taken (or this would test the normal path), and on new
    inputs it must return what the normal path returns, bit for bit, in fresh tensors (the outputs
    of the call before untouched). Where a weight is off a 16-byte boundary, nothing may be
    recorded."""
    from rnnbench import nn as module_path

    module = _module(cell, input_size, hidden, bias, dtype)
    # torch.nn's flattened weights sit end to end: at some widths a bias starts off a 16-byte
    # boundary, and then no replay may stand in (its kernels were specialised on aligned pointers).
    aligned = not any(w.data_ptr() & 15 for w in module._flat_weights)
    with matmul_mode(dtype), torch.no_grad():
        first = _flat(module(*_call_inputs(cell, batch, input_size, hidden, dtype, states, 1)))
        kept = [t.clone() for t in first]
        replays = module_path._REPLAYS.get(module)
        if not aligned:
            assert replays is None, "a call with a misaligned weight was recorded"
            return
        assert replays and len(replays) == 1, "the first call was not recorded"
        taken = []
        (weights, launch, layer), = replays.values()
        replay = layer.forward
        layer.forward = lambda inputs: taken.append(1) or replay(inputs)
        x, hx = _call_inputs(cell, batch, input_size, hidden, dtype, states, 2)
        got = _flat(module(x, hx))
        assert taken, "the second call did not replay"
        del module_path._REPLAYS[module]  # the normal path on the same inputs
        want = _flat(module(x, hx))
    for g, w in zip(got, want):
        assert torch.equal(g, w) and g.shape == w.shape and g.stride() == w.stride()
    for f, k in zip(first, kept):
        assert torch.equal(f, k), "the replay wrote the call before's outputs"


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_an_eager_forward_replays_only_what_it_recorded(cell):
    """A call the recorded one does not stand for takes the normal path (and is right): another
    batch, the TF32 switch flipped, initial states given or not, gradients wanted, the weights
    replaced or cast; each against the normal path's result on the same inputs."""
    from rnnbench import nn as module_path

    module = _module(cell, 100, 100, True, "fp32")

    def run(batch, states=True, dtype="fp32", seed=3):
        x, hx = _call_inputs(cell, batch, 100, 100, "fp32", states, seed)
        with matmul_mode(dtype):
            got = _flat(module(x, hx))
            saved = module_path._REPLAYS.pop(module, None)
            want = _flat(module(x, hx))
            if saved is not None:
                module_path._REPLAYS[module] = saved
        for g, w in zip(got, want):
            assert torch.equal(g.detach(), w.detach())

    with torch.no_grad():
        run(20)
        run(20)
        run(21)
        run(20, states=False)
        run(20, dtype="tf32")
        assert len(module_path._REPLAYS[module]) == 4  # four keys recorded
        with torch.no_grad():
            module.weight_hh_l0 = torch.nn.Parameter(module.weight_hh_l0 * 0.5)
        run(20)
    run(20)  # gradients wanted: another path (ops/replayed_layer.py), its first call recorded
    with torch.no_grad():
        module.double().float()  # cast and back: the same Parameters, new storage
        run(20, seed=4)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_a_recording_refused_past_hidden_128_leaves_the_normal_path(cell):
    """A TF32 forward whose input projection is cuBLAS' (past ``projection.EVEN_MAX_FLOP``: theano's
    batch 128, hidden 512) has work outside our launches, which no recording takes: its first calls
    are recorded and refused, ``ATTEMPTS`` times, then it runs the normal path unrecorded; every
    call returns the normal path's results, bit for bit."""
    from rnnbench import nn as module_path
    from rnnbench.ops import replay as replays
    from rnnbench.ops.replayed_layer import ATTEMPTS

    module = _module(cell, 512, 512, True, "tf32")
    assert not any(w.data_ptr() & 15 for w in module._flat_weights)  # (else refused for that)
    with matmul_mode("tf32"), torch.no_grad():
        for seed in range(ATTEMPTS + 2):
            gen = torch.Generator(device="cuda").manual_seed(seed)
            x = torch.randn(30, 128, 512, generator=gen, device="cuda")
            got = _flat(module(x))
            replays.ENABLED = False  # the normal path on the same inputs
            try:
                want = _flat(module(x))
            finally:
                replays.ENABLED = True
            assert all(torch.equal(g, w) for g, w in zip(got, want)), seed
        (weights, launch, layer), = module_path._REPLAYS[module].values()
    assert layer.forward is None and layer.refused == {"forward": ATTEMPTS}, layer.refused


def _training_step(module, x, hx, loss_on, around=contextlib.nullcontext):
    """Outputs and every gradient (input, states, weights) of a loss on ``loss_on`` (``all``: the
    output and the final states; ``output``: the output alone, so the states' gradients arrive
    absent), the leaves that want one; the call and its backward within ``around()``."""
    with around():
        output, finals = module(x, hx)
        finals = list(finals) if isinstance(finals, tuple) else [finals]
        read = [output, *finals] if loss_on == "all" else [output]
        loss = sum((t.float() * torch.linspace(-1, 1, t.numel(), device="cuda").view(t.shape)).sum() for t in read)
        leaves = [t for t in (x, *(hx if isinstance(hx, tuple) else (hx,))) if t is not None and t.requires_grad]
        leaves += [p for p in module.parameters() if p.requires_grad]
        return [output.detach(), *(f.detach() for f in finals)], list(torch.autograd.grad(loss, leaves))


@pytest.mark.parametrize("states, bias, grads", [(True, True, "all"), (False, True, "all"), (True, False, "all"),
                                                 (True, True, "weights-only"), (True, True, "output-loss"),
                                                 (False, False, "output-loss")])
@pytest.mark.parametrize("cell, batch, hidden, input_size, dtype", _replayed_cases(
    [("lstm", 32, 128, 128), ("gru", 3, 37, 100), ("rnn_tanh", 20, 100, 100), ("gru", 128, 128, 128),
     ("lstm", 5, 100, 3)], TENSOR_CORE_SIZES[:3]))
def test_a_training_step_is_replayed(cell, batch, hidden, input_size, dtype, states, bias, grads):
    """With gradients wanted, a module's first eager call of a shape records its layer's forward
    and backward (``ops/replayed_layer.py``), and the next calls replay both: each replay must be
    taken (or this would test the normal path), and on new inputs its output, final states and
    every gradient must equal the normal path's, bit for bit, in tensors of its own (the next
    replayed call leaves them as they were). ``grads``: input, states and weights
    want gradients (``all``), only the weights, or all with a loss on the output alone (the final
    states' gradients absent)."""
    _check_training_replay(cell, batch, hidden, input_size, dtype, states, bias, grads)


@pytest.mark.parametrize("dtype", [d for d in ("fp32", "bf16") if d in DTYPES])
@pytest.mark.parametrize("cell, batch, hidden, input_size", [("lstm", 32, 128, 128), ("rnn_tanh", 20, 100, 100),
                                                              ("gru", 3, 37, 100)])
def test_a_training_step_is_replayed_under_save_on_cpu(cell, batch, hidden, input_size, dtype):
    """Under ``torch.autograd.graph.save_on_cpu`` (a saved-tensor hook whose unpack copies each
    tensor back to the device) the backward is recorded on the first call and replayed after, as
    without it: the hook's copies are made once, before the recording, not inside it."""
    _check_training_replay(cell, batch, hidden, input_size, dtype, True, True, "all",
                           around=lambda: torch.autograd.graph.save_on_cpu(pin_memory=True))


@pytest.mark.parametrize("cell", ["lstm", "rnn_tanh"])
def test_the_first_training_call_on_a_stream_records_both_halves(cell):
    """A stream's barrier counters are made on its first use; made inside a recording, their fill
    refused it (``replay.recording`` makes them first). On a new stream, whose counters do not
    exist yet, as a process's first backward finds them, the first call records both halves."""
    stream = torch.cuda.Stream()

    @contextlib.contextmanager
    def on_the_new_stream():
        stream.wait_stream(torch.cuda.current_stream())  # (the inputs, made on the default stream)
        with torch.cuda.stream(stream):
            yield
        torch.cuda.current_stream().wait_stream(stream)

    _check_training_replay(cell, 20, 100, 100, "fp32", True, True, "all", around=on_the_new_stream)


def _check_training_replay(cell, batch, hidden, input_size, dtype, states, bias, grads,
                           around=contextlib.nullcontext):
    """``test_a_training_step_is_replayed``'s check, each training step within ``around()``."""
    from rnnbench import nn as module_path
    from rnnbench.ops import replay as replays

    module = _module(cell, input_size, hidden, bias, dtype)
    aligned = not any(w.data_ptr() & 15 for w in module._flat_weights)

    def inputs(seed):
        x, hx = _call_inputs(cell, batch, input_size, hidden, dtype, states, seed)
        if grads != "weights-only":
            x.requires_grad_(True)
            for s in (hx if isinstance(hx, tuple) else (hx,)):
                if s is not None:
                    s.requires_grad_(True)
        return x, hx

    loss_on = "output" if grads == "output-loss" else "all"
    step = lambda x, hx: _training_step(module, x, hx, loss_on, around)  # noqa: E731
    with matmul_mode(dtype):
        step(*inputs(1))  # recorded: both halves, on the first call
        torch.cuda.synchronize()
        kept = module_path._REPLAYS.get(module)
        if not aligned:
            assert kept is None, "a call with a misaligned weight was recorded"
            return
        (weights, launch, layer), = kept.values()
        assert layer.forward is not None and len(layer.backwards) == 1, f"not recorded: {layer.refused}"
        taken = []
        forward, (asked, backward), = layer.forward, *layer.backwards.items()
        layer.forward = lambda inputs: taken.append("forward") or forward(inputs)
        layer.backwards[asked] = lambda inputs: taken.append("backward") or backward(inputs)
        x, hx = inputs(2)
        got = step(x, hx)
        assert taken == ["forward", "backward"], taken
        kept = [t.clone() for t in [*got[0], *got[1]]]
        step(*inputs(3))  # replayed again: got's tensors must be its own
        torch.cuda.synchronize()
        assert all(torch.equal(t, k) for t, k in zip([*got[0], *got[1]], kept)), "a replay wrote a call's results"
        replays.ENABLED = False  # the normal path on the same inputs
        try:
            want = step(x, hx)
        finally:
            replays.ENABLED = True
    torch.cuda.synchronize()
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
        assert torch.equal(g, w) and g.shape == w.shape and g.stride() == w.stride()


@pytest.mark.parametrize("train", [False, True], ids=["no_grad", "train"])
@pytest.mark.parametrize("num_layers, bidirectional", [(2, False), (1, True), (3, True)],
                         ids=["2_layers", "bidirectional", "3_bidirectional"])
@pytest.mark.parametrize("cell, batch, hidden, input_size, dtype", [
    ("lstm", 20, 100, 100, "fp32"), ("gru", 32, 128, 128, "tf32"), ("rnn_tanh", 20, 100, 100, "fp32"),
    ("lstm", 32, 128, 128, "bf16"), ("gru", 3, 37, 100, "fp32"), ("lstm", 20, 500, 100, "tf32")])
def test_a_stacked_eager_call_is_replayed(cell, batch, hidden, input_size, dtype, num_layers, bidirectional, train):
    """A module of several layers or two directions: its first eager call of a shape records each
    layer and direction on its own (a tuple of ``LayerReplays`` in ``rnn._REPLAYS``,
    ``ops/replayed_layer.run_layer``), and
    the next calls replay each: under no_grad every layer's forward, with gradients every layer's
    forward and backward (a bidirectional layer's output gradient arrives strided, its half of the
    stack's, and is made contiguous first) where the backward is our launches alone. Every replay
    recorded must be taken
    on the next call (or this would test the normal path), and on new inputs the output, final
    states and every gradient must equal the normal path's, bit for bit (``replay.ENABLED`` off),
    the call before's results untouched. At batch 3, hidden 37 (a plane of 444 bytes) the layers
    above the first take unaligned views and run the normal path, and the GRU's weights there lie
    off the boundary (nothing recorded): only the results are checked."""
    from rnnbench import nn as module_path
    from rnnbench.ops import replay as replays

    kwargs = {"nonlinearity": cell[4:]} if cell.startswith("rnn") else {}
    torch.manual_seed(0)
    module = REPLAYED_MODULES[cell](input_size, hidden, num_layers=num_layers, bidirectional=bidirectional,
                                    backend="triton", **kwargs).to("cuda", TORCH_DTYPE[dtype])
    directions = 2 if bidirectional else 1

    def inputs(seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(7, batch, input_size, generator=gen, device="cuda").to(TORCH_DTYPE[dtype])
        shape = (num_layers * directions, batch, hidden)
        h0 = (torch.randn(shape, generator=gen, device="cuda") * 0.5).to(TORCH_DTYPE[dtype])
        c0 = (torch.randn(shape, generator=gen, device="cuda") * 0.5).to(TORCH_DTYPE[dtype])
        hx = (h0, c0) if cell == "lstm" else h0
        for t in (x, h0, c0) if train else ():
            t.requires_grad_(True)
        return x, hx

    def call(x, hx):
        if train:
            outputs, grads = _training_step(module, x, hx, "all")
            return [*outputs, *grads]
        with torch.no_grad():
            return _flat(module(x, hx))

    # (torch.nn's flattened weights at some widths leave a bias off a 16-byte boundary: then
    # nothing may be recorded, and only the results are checked)
    aligned = not any(w.data_ptr() & 15 for w in module._flat_weights)
    with matmul_mode(dtype):
        first = call(*inputs(1))
        kept = [t.clone() for t in first]
        stacked = module_path._REPLAYS.get(module)
        assert (stacked is None) == (not aligned)
        (weights, launch, layers), = stacked.values() if aligned else [((), None, ())]
        assert len(layers) == (num_layers * directions if aligned else 0)
        taken, recorded = [], []
        for k, layer in enumerate(layers):
            if layer.forward is not None:
                recorded.append(("forward", k))
                layer.forward = (lambda r, k: lambda i: taken.append(("forward", k)) or r(i))(layer.forward, k)
            for asked, backward in list(layer.backwards.items()):
                recorded.append(("backward", k))
                layer.backwards[asked] = (lambda r, k: lambda i: taken.append(("backward", k)) or r(i))(backward, k)
        if aligned and batch * hidden * TORCH_DTYPE[dtype].itemsize % 16 == 0:  # (every layer's tensors aligned)
            # Every forward; with gradients every backward on FMA units (hidden up to 128), and on
            # tensor cores the first layer's (input 100, as test_a_training_step_is_replayed's): above
            # it the input is 500 wide and the backward's products are cuBLAS', which no recording takes.
            backwards = range(len(layers) if hidden <= 128 else directions) if train else ()
            required = {("forward", k) for k in range(len(layers))} | {("backward", k) for k in backwards}
            assert required <= set(recorded), [layer.refused for layer in layers]
        x, hx = inputs(2)
        got = call(x, hx)
        assert sorted(taken) == sorted(recorded)
        replays.ENABLED = False
        try:
            want = call(x, hx)
        finally:
            replays.ENABLED = True
    torch.cuda.synchronize()
    for g, w in zip(got, want):
        assert torch.equal(g, w) and g.shape == w.shape and g.stride() == w.stride()
    for f, k in zip(first, kept):
        assert torch.equal(f, k), "a replay wrote the call before's results"


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("cell", ["rnn_tanh", "lstm"])
def test_replays_take_back_outputs_let_go_of_and_never_those_held(cell, train):
    """``replay.REUSE`` on the GPU, for eager forwards under no_grad and for training steps, each
    call on new inputs: one call's results held through six more calls keep their values and
    their memory is never another call's; the others are let go of, and their memory must come
    back as later calls' (the replay's own allocation taking a second call: memory the allocator
    recycles would be a new allocation), or this would test nothing. Every call's results equal the
    normal path's on the same inputs, bit for bit, and nothing the replay keeps carries a call's
    autograd history (the training forward's h_n and c_n are the Function's outputs whole)."""
    import weakref

    from rnnbench import nn as module_path
    from rnnbench.ops import replay as replays

    module = _module(cell, 100, 100, True, "fp32")

    def inputs(seed):
        x, hx = _call_inputs(cell, 20, 100, 100, "fp32", True, seed)
        for t in (x, *(hx if isinstance(hx, tuple) else (hx,))) if train else ():
            t.requires_grad_(True)
        return x, hx

    def call(x, hx):
        if not train:
            with torch.no_grad():
                return _flat(module(x, hx))
        outputs, grads = _training_step(module, x, hx, "all")
        return [*outputs, *grads]

    def forwards():
        return [layer.forward for _, _, layer in module_path._REPLAYS[module].values() if layer.forward is not None]

    def used():  # (the replay's own allocations the last call took)
        return [a[0] for found in forwards() for a in found._kept[3][0]]

    def kept():  # (all its own allocations: of the last two calls, and made ahead for the next)
        return [a for found in forwards() for owned in (*found._kept[3], found._kept[2]) for a in owned
                if a is not None]

    call(*inputs(0))  # recorded
    held = call(*inputs(1))
    values = [t.clone() for t in held]
    where = {t.untyped_storage().data_ptr() for t in held}
    served, came_back = [], 0
    for seed in range(2, 8):
        x, hx = inputs(seed)
        got = call(x, hx)
        now = used()
        came_back += sum(any(r() is t for r in served) for t in now)
        served += [weakref.ref(t) for t in now]
        assert not where & {t.untyped_storage().data_ptr() for t in got}, "a held output's memory was taken"
        replays.ENABLED = False  # the normal path on the same inputs
        try:
            want = call(x, hx)
        finally:
            replays.ENABLED = True
        assert all(torch.equal(g, w) for g, w in zip(got, want))
        del got, want
    torch.cuda.synchronize()
    assert came_back, "no output let go of came back"
    assert all(torch.equal(t, k) for t, k in zip(held, values)), "a held output was written"
    own = [t for a in kept() for t in (a[0], *a[4])]
    assert own and all(t.grad_fn is None and not t.requires_grad for t in own)


GLUON_DTYPES = [d for d in ("bf16", "fp16") if d in DTYPES]
GLUON_CELLS = ("lstm", "gru")  # the cells with a Gluon forward (Plan.gluon, ops/<cell>/gluon.py)
NO_GLUON = "no Gluon forward here (another GPU or Triton): plans.gluon_forward"


def _present(outputs):
    """A layer's outputs without the absent cell state (the GRU's c_n, None)."""
    return [o for o in outputs if o is not None]


@pytest.mark.parametrize("parts", ["all", "no-states", "no-bias"])
@pytest.mark.parametrize("batch, seq, hidden", [(1, 5, 260), (3, 7, 300), (20, 9, 512), (37, 6, 500), (16, 40, 768),
                                                (33, 4, 1024)])
@pytest.mark.parametrize("dtype", GLUON_DTYPES)
@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_gluon_forward(cell, dtype, batch, seq, hidden, parts):
    """The LSTM's and GRU's forward in Gluon (``Plan.gluon``, the default for the 16-bit layers it
    covers on sm_90): the plan must pick it (or this would test the ``tl`` kernel), then output,
    final states and every gradient (the ``tl`` backward reads what it saved) against float64,
    with and without initial states and biases, one to three batch blocks, widths that leave a
    piece partial; under no_grad (nothing saved) the same output."""
    from rnnbench.ops import recurrence

    launch = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda"))
    if not launch.forward.gluon:
        pytest.skip(NO_GLUON)
    _check_gluon_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden), parts)


@pytest.mark.parametrize("parts", ["all", "no-states"])
@pytest.mark.parametrize("batch, seq, hidden", [(1, 5, 260), (3, 7, 300), (20, 9, 512), (37, 6, 500), (16, 40, 768),
                                                (32, 6, 768)])
@pytest.mark.parametrize("registers", [True, False])
@pytest.mark.parametrize("dtype", GLUON_DTYPES)
@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_gluon_forward_weights_in_registers(cell, dtype, registers, batch, seq, hidden, parts):
    """The Gluon forwards with the weights in registers (``Plan.reg_weights``, every piece of h up
    to three) and from shared memory, each asked for: the plan must take it, then output, final
    states and every gradient against float64 as :func:`test_gluon_forward`."""
    from rnnbench.ops import recurrence

    with plan_override(forward_reg_weights=registers):
        try:
            launch = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda"))
        except ValueError:  # (asked for where no Gluon forward runs)
            pytest.skip(NO_GLUON)
        assert launch.forward.gluon and launch.forward.reg_weights == registers
        _check_gluon_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden), parts)


def _check_gluon_layer(cell, dtype, tensors, parts="all"):
    """The layer's output, final states and every gradient against float64 (``parts``:
    "no-states" drops the initial states, "no-bias" the biases), then the same output under
    no_grad."""
    batch, hidden = tensors[1].shape
    absent = []
    if parts == "no-states":
        absent = [k for k in (1, 2) if tensors[k] is not None]  # h0, and the LSTM's c0
        for k in absent:
            tensors[k] = None
    elif parts == "no-bias":
        tensors[5] = tensors[6] = None
    got = _outputs_and_grads(recurrent_layer, cell, tensors, TORCH_DTYPE[dtype])
    _assert_matches_float64(cell, got, dtype, tensors, absent, batch, hidden)
    with torch.no_grad():
        inputs = [None if x is None else x.to("cuda", TORCH_DTYPE[dtype]) for x in tensors]
        unsaved = _present(recurrent_layer(cell, *inputs))
    for a, b in zip(unsaved, got[:len(unsaved)]):
        assert relative_error(a, b.detach()) <= 1e-6


def _assert_matches_float64(cell, got, dtype, tensors, absent, batch, hidden):
    """``got`` (the layer's output and final states, then the gradients of the present inputs
    under :func:`_loss_weights`) against the naive layer in float64 on the same inputs rounded to
    ``dtype``, the ``absent`` states (indices 1, 2) as zeros whose gradients are left out."""
    rounded = [torch.zeros(batch, hidden) if k in absent else None if x is None else x.to(TORCH_DTYPE[dtype])
               for k, x in enumerate(tensors)]
    ref = _outputs_and_grads(naive_layer, cell, rounded, torch.float64)
    first = 3 if cell == "lstm" else 2  # gradients from here: d_x, [d_h0, d_c0], the weights'...
    ref = ref[:first + 1] + ref[first + 1 + len(absent):]
    assert len(got) == len(ref)
    for k, (a, b) in enumerate(zip(got, ref)):
        err = relative_error(a, b)
        assert err <= tolerance(cell, dtype), f"tensor {k}: relative error {err:.3g}"


@pytest.mark.parametrize("parts", ["all", "no-states"])
@pytest.mark.parametrize("batch, seq, hidden", [(1, 256, 260), (16, 300, 768), (3, 257, 1024)])
@pytest.mark.parametrize("dtype", GLUON_DTYPES)
@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_gluon_forward_projecting_ahead_in_a_cuda_graph(monkeypatch, cell, dtype, batch, seq, hidden, parts):
    """A long Gluon forward captured in a CUDA graph computes its input projection ahead
    (``Plan.input_ahead``: chunks on a side stream while the kernel runs; asked for the GRU, as it
    is the LSTM's alone by default): the capture must take that path (``project_ahead`` called,
    or this would test the other), then the replayed output, final states and every gradient
    against float64."""
    from rnnbench.ops import recurrence

    asked = {} if cell == "lstm" else {"forward_input_ahead": True}
    try:
        with plan_override(**asked):
            ahead = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).forward
    except ValueError:  # (asked for where no Gluon forward runs)
        ahead = None
    if ahead is None or not ahead.input_ahead:
        pytest.skip(NO_GLUON)
    calls, project_ahead = [], recurrence.project_ahead
    monkeypatch.setattr(recurrence, "project_ahead", lambda *a: calls.append(1) or project_ahead(*a))
    tensors = _layer(cell, batch, seq, 5, hidden)
    absent = [k for k in (1, 2) if tensors[k] is not None] if parts == "no-states" else []
    for k in absent:
        tensors[k] = None
    leaves = [None if x is None else x.to("cuda", TORCH_DTYPE[dtype]).requires_grad_() for x in tensors]
    with plan_override(**asked):
        weights = _loss_weights(_present(recurrent_layer(cell, *leaves)))  # (an eager call: no projection ahead)

        def step():
            out = _present(recurrent_layer(cell, *leaves))
            loss = sum((o.double() * w).sum() for o, w in zip(out, weights))
            return *out, *torch.autograd.grad(loss, [x for x in leaves if x is not None])

        got = graphed(step)()
    assert calls, "the capture did not project ahead"
    _assert_matches_float64(cell, got, dtype, tensors, absent, batch, hidden)


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_the_gluon_kernel_waits_for_the_steps_written(cell):
    """With ``ready`` (projecting ahead), the Gluon kernel reads step t's input only once the count
    of steps written passes t: launched over an input of NaNs, with the real one copied in chunks on
    another stream after a delay of some milliseconds, it returns what it returns over the real
    input given whole (a kernel that did not wait would read NaNs)."""
    from rnnbench.ops import projection, recurrence

    if "fp16" not in GLUON_DTYPES:
        pytest.skip("no 16-bit types here")
    B, T, H = 16, 64, 768
    launch = recurrence.layer_launch(cell, B, H, torch.float16, torch.device("cuda"))
    if not launch.forward.gluon:
        pytest.skip(NO_GLUON)
    _, _, _, w_ih, w_hh, b_ih, b_hh = [None if t is None else t.to("cuda", torch.float16)
                                       for t in _layer(cell, B, T, 5, H)]
    x = torch.randn(T, B, 5, device="cuda", dtype=torch.float16)
    x_proj = x @ w_ih.t()
    want = recurrence.recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, None, None, launch, False)
    late = torch.full_like(x_proj, float("nan"))
    ready = torch.zeros(1, device="cuda", dtype=torch.int32)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # each kernel the side stream runs, loaded before the recurrence waits
        torch.cuda._sleep(1)
        torch.empty_like(late[:1]).copy_(x_proj[:1])
        ready.fill_(0)
    got = recurrence.recurrence_forward(cell, late, w_hh, b_ih, b_hh, None, None, launch, False, ready=ready)
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # cycles: about 10 ms at the H100's clock
        for start, end in projection.ahead_chunks(T, B):
            late[start:end].copy_(x_proj[start:end])
            ready.fill_(end)
    torch.cuda.current_stream().wait_stream(side)
    pairs = [(got[0][1:], want[0][1:]), (got[1], want[1])]  # output, h_n
    if cell == "lstm":
        pairs.append((got[2], want[2]))  # c_n
    for a, b in pairs:
        assert not a.isnan().any() and relative_error(a, b) <= 1e-6


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_gluon_forwards_on_counters_from_a_pool(monkeypatch, cell):
    """Eager Gluon forwards take their arrival counters from a pool per stream
    (``launch.counted_counters``), left counted by each call. With a pool of 5 counters and 2 or 3
    batch blocks, it is zeroed every call or two: 12 calls in a row, eager and replayed from a CUDA graph
    captured between them (whose counters are its own), each give the first call's output and
    final state bit for bit (a slice handed out counted would let the barrier pass before h is
    written)."""
    from rnnbench.ops import launch, recurrence

    batch, seq, hidden = 37, 24, 512
    if "bf16" not in GLUON_DTYPES or not recurrence.layer_launch(cell, batch, hidden, torch.bfloat16,
                                                                 torch.device("cuda")).forward.gluon:
        pytest.skip(NO_GLUON)
    monkeypatch.setattr(launch, "POOLS", {})
    monkeypatch.setattr(launch, "COUNTED_POOL", 5)
    inputs = [None if x is None else x.to("cuda", torch.bfloat16) for x in _layer(cell, batch, seq, 5, hidden)]

    def call():
        with torch.no_grad():
            return [t.clone() for t in recurrent_layer(cell, *inputs)[:2]]

    first = call()
    replay = graphed(call)
    for k in range(12):
        for a, b in zip(replay() if k % 4 == 3 else call(), first):
            assert torch.equal(a, b), k
    assert launch.POOLS and all(p.buffer.numel() == 5 for p in launch.POOLS.values())


@pytest.mark.parametrize("cell", GLUON_CELLS)
def test_gluon_plan_with_an_h0_off_a_16_byte_boundary(cell):
    """The Gluon forward copies h0 into shared memory 16 bytes at a time; the second layer's state
    of a 2-layer module at batch 3, hidden 500 starts 3000 bytes in (8 past a 16-byte boundary).
    That call runs (the ``tl`` kernel) and matches torch.nn's float64 module."""
    from rnnbench.ops import recurrence

    if "bf16" not in GLUON_DTYPES or not recurrence.layer_launch(cell, 3, 500, torch.bfloat16,
                                                                 torch.device("cuda")).forward.gluon:
        pytest.skip(NO_GLUON)
    ours_cls, theirs_cls, _ = MODULES[cell]
    torch.manual_seed(0)
    ours = ours_cls(8, 500, num_layers=2, backend="triton").cuda().to(torch.bfloat16)
    ref = theirs_cls(8, 500, num_layers=2).double()
    ref.load_state_dict({k: v.double().cpu() for k, v in ours.state_dict().items()})
    x = torch.randn(5, 3, 8)
    hx = [(torch.randn(2, 3, 500) * 0.5).cuda().to(torch.bfloat16) for _ in range(2 if cell == "lstm" else 1)]
    assert hx[0][1].data_ptr() % 16 != 0

    def state(tensors):  # the module's state argument: (h0, c0) for the LSTM, h0 for the GRU
        return tuple(tensors) if cell == "lstm" else tensors[0]

    def finals(returned):  # h_n, and the LSTM's c_n
        return list(returned) if cell == "lstm" else [returned]

    with torch.no_grad():
        got = ours(x.cuda().to(torch.bfloat16), state(hx))
        want = ref(x.double(), state([h.double().cpu() for h in hx]))
    for a, b in zip([got[0], *finals(got[1])], [want[0], *finals(want[1])]):
        assert relative_error(a.cpu(), b) <= tolerance(cell, "bf16")


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_transpose_backward_on_many_programs(cell, dtype, resident):
    """The LSTM's and GRU's transpose backward (split-K off; their default past hidden 768, and the
    RNN's only kind): hidden 100 over 7 programs, batch 20 over two batch blocks."""
    with plan_override(block_h=16, block_b=16, w_resident=resident, split_k=False):
        check_layer(cell, dtype, _layer(cell, 20, 9, 5, 100))


@pytest.mark.parametrize("batch, seq, hidden", [(20, 9, 100), (16, 40, 768), (64, 30, 1024)])
@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_split_k_backward(cell, dtype, resident, batch, seq, hidden):
    """The split-K backward (``Plan.split_k``) on its default tiles: 7 to 64 programs per batch
    block, each writing a partial dh of every unit and summing its own units' partials after the
    barrier; W_hh^T resident where it fits, or re-read each step. The counters end at zero."""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype), plan_override(split_k=True):
        backward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert backward.split_k and backward.grid(batch, hidden)[0] > 1
        if resident and not backward.w_resident:
            pytest.skip("W_hh^T does not fit in shared memory here (or 3xTF32)")
        with plan_override(w_resident=resident):
            check_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch, seq, hidden", [(20, 9, 100), (3, 7, 37), (64, 30, 1024), (128, 5, 1024),
                                                (20, 5, 1500), (128, 4, 576)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_gate_split_backward(cell, dtype, batch, seq, hidden):
    """The transpose backward with each gate's partial apart (``Plan.gate_split``): groups of 4
    (LSTM) or 3 (GRU) programs, each multiplying one gate's gradients of every unit for the group's
    units, summed after the group's own barrier; hidden 100 and 37 in 7 and 3 blocks of 16 (the
    last group with programs that own no unit), 1024 in 64 at 64 batch rows a program (two batch
    blocks at 128), 1500 (zaremba-large's, the default there since gate_split_wide) in 94 blocks
    in 96 programs. The counters, group counters too, end at zero."""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype), plan_override(gate_split=True, w_resident=False, split_k=False):
        backward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert backward.gate_split and backward.grid(batch, hidden)[0] % backward.gate_split == 0
        check_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch", [64, 128])
@pytest.mark.parametrize("dtype", ["tf32", "bf16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_backward_past_hidden_2048(cell, dtype, batch):
    """The default backward at hidden 2560: at batch 64 (32 units a program) the gate split
    (0.47-0.86x the transpose plan's step past 2048 on the H200); at batch 128 (64 rows and 64 units
    a program) the transpose plan, whose 128-wide chunks of fp32 weights in 4 stages took 256 KB of
    shared memory and failed to launch (OutOfResources) until ``plans._backward_chunks`` (now
    ``_chunks_fit``) narrowed them. Against float64; the counters end at zero."""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype):
        backward = recurrence.layer_launch(cell, batch, 2560, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert bool(backward.gate_split) == (batch == 64) and not backward.split_k
        check_layer(cell, dtype, _layer(cell, batch, 3, 5, 2560))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


def _errors(cell, tensors, **fields):
    """Relative errors against float64 of everything the TF32 layer returns (output, final states,
    every gradient) under ``fields``; asserts the forward's ``half_operands`` is what ``fields``
    leave it."""
    from rnnbench.ops import recurrence

    b, h = tensors[0].shape[1], tensors[4].shape[1]
    with matmul_mode("tf32"), plan_override(**fields):
        half = recurrence.layer_launch(cell, b, h, torch.float32, torch.device("cuda")).forward.half_operands
        got = _outputs_and_grads(recurrent_layer, cell, tensors, torch.float32)
    ref = _outputs_and_grads(naive_layer, cell, tensors, torch.float64)
    return half, [relative_error(a, b) for a, b in zip(got, ref)]


@pytest.mark.parametrize("batch, seq, hidden", [(128, 5, 1024), (37, 6, 1024), (16, 4, 1024), (3, 7, 100),
                                                (20, 9, 768)])
@pytest.mark.parametrize("scaled", [False, True], ids=["drawn", "scaled"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_half_operands_forward(cell, batch, seq, hidden, scaled):
    """TF32's forward on fp16 operands (``Plan.half_operands``): the default at hidden 1024
    (streamed at 64 batch rows a program, resident at 16 and 32) and 768 (resident), asked for at
    hidden 100 (where the default is the FMA forward).
    Everything the layer returns within TF32's tolerance of float64, and the output no further off
    than twice the TF32 plan's on the same tensors. ``scaled``: h0 of batch row 0 at 2^20 (past
    fp16's 65504) with W_hh at 2^-20, h0 of row 1 at 2^-12. The counters end at zero."""
    tensors = _layer(cell, batch, seq, 5, hidden)
    if scaled:
        tensors[1][0] *= 2.0 ** 20
        tensors[1][1 % batch] *= 2.0 ** -12
        tensors[4] = tensors[4] * 2.0 ** -20
    asked = {} if hidden > 128 else {"forward_half_operands": True}
    half, errors = _errors(cell, tensors, **asked)
    # (the TF32 plan with the projection's own launch, as the half operands' plan takes it: at hidden
    # 100 the TF32 plan is the FMA forward, whose producers round the projection's operands to
    # nearest; against them the half operands' output was 2.6-2.8x as far from float64 in the four cases on
    # the H200, 3.7e-4 against 1.3e-4 in one, where against the launch's tiles it had been within 2x)
    plain, tf32_errors = _errors(cell, tensors, forward_half_operands=False, forward_produce=False)
    assert half and not plain
    tol = tolerance(cell, "tf32")
    assert all(e <= tol for e in errors), (errors, tol)
    assert errors[0] <= 2 * tf32_errors[0], (errors[0], tf32_errors[0])
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch, seq, hidden", [(128, 5, 650), (37, 6, 650), (20, 7, 500)])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_half_operands_forward_with_padded_rows(cell, batch, seq, hidden, nan_buffers):
    """``Plan.pad_rows`` (the default at these widths) against unpadded: the fp16-operand forward
    with its own fp16 rows 16 bytes apart (hidden 650: 656; 500: 504), read to the padded end,
    weights streamed at batch 128, resident at 37 and 20. The same products in the same order:
    everything the layer returns bit for bit the unpadded forward's, and within TF32's tolerance of
    float64; the counters end at zero. Every float buffer the layer allocates starts as NaN: a
    padding read before it is written as zeros shows."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import row_stride

    def check_plan(pad):
        forward = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda")).forward
        assert forward.half_operands and forward.pad_rows == pad and (row_stride(forward, hidden) > hidden) == pad

    tensors = _layer(cell, batch, seq, 5, hidden)
    with matmul_mode("tf32"):
        got = padded_and_unpadded(lambda: _outputs_and_grads(recurrent_layer, cell, tensors, torch.float32),
                                  check_plan, "forward_pad_rows")
    ref = _outputs_and_grads(naive_layer, cell, tensors, torch.float64)
    assert all(relative_error(a, b) <= tolerance(cell, "tf32") for a, b in zip(got, ref))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch, seq, hidden", [(128, 5, 650), (37, 6, 650), (20, 7, 1500)])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_16bit_forward_with_padded_rows(cell, dtype, batch, seq, hidden, nan_buffers):
    """The 16-bit forward on rows of its own padded to 16 bytes (``Plan.pad_rows`` asked for,
    ``SPLIT_ONCE`` 5: the weights copied into a padded copy, h exchanged through padded planes)
    against the default plan: weights streamed at batch 128, resident at 37 and 20. The same
    products in the same order as the unpadded exchange plan's (Gluon's where it is the default
    may differ in order, so the bits are compared against the plan with Gluon off); within the
    dtype's tolerance of float64; NaN-filled buffers; the counters end at zero. (Written
    2026-11-29 without a GPU; its first run is the next device call's.)"""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import split_once_level

    def check_plan(pad):
        forward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).forward
        assert forward.pad_rows == pad and split_once_level(forward) == (5 if pad else 0)

    tensors = _layer(cell, batch, seq, 5, hidden)
    with matmul_mode(dtype):
        got = padded_and_unpadded(lambda: _outputs_and_grads(recurrent_layer, cell, tensors, TORCH_DTYPE[dtype]),
                                  check_plan, "forward_pad_rows", forward_gluon=False)
    ref = _outputs_and_grads(naive_layer, cell, tensors, torch.float64)
    assert all(relative_error(a, b) <= tolerance(cell, dtype) for a, b in zip(got, ref))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch, seq, hidden", [(128, 5, 650), (20, 7, 100), (37, 6, 500)])
@pytest.mark.parametrize("dtype", ["tf32", "bf16", "fp32"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_split_k_backward_with_padded_partials(cell, dtype, batch, seq, hidden, nan_buffers):
    """The split-K backward's partials with rows padded to 16 bytes (``Plan.pad_rows``, asked for:
    656, 104, 504; the default at batch 128) against rows ``H`` apart: the same products in the same order,
    so everything the layer returns is bit for bit the unpadded one's and within the dtype's
    tolerance of float64. Every float buffer the layer allocates starts as NaN: a padding summed
    before it is written as zeros shows; the counters end at zero."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import row_stride

    def check_plan(pad):
        backward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert backward.split_k and backward.pad_rows == pad and (row_stride(backward, hidden) > hidden) == pad

    tensors = _layer(cell, batch, seq, 5, hidden)
    with matmul_mode(dtype):
        got = padded_and_unpadded(lambda: _outputs_and_grads(recurrent_layer, cell, tensors, TORCH_DTYPE[dtype]),
                                  check_plan, "backward_pad_rows")
    ref = _outputs_and_grads(naive_layer, cell, tensors, torch.float64)
    assert all(relative_error(a, b) <= tolerance(cell, dtype) for a, b in zip(got, ref))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("batch, seq, hidden", [(20, 9, 100), (16, 40, 768)])
@pytest.mark.parametrize("rows", [128, 256])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_split_k_backward_with_taller_partials(cell, dtype, rows, batch, seq, hidden):
    """The split-K backward with its partials' matmuls ``rows`` units high (one covering hidden 100,
    masked past it; three or six at 768): each program stores fewer, larger tiles of partials."""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype), plan_override(split_k=True, backward_block_k=rows):
        backward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert backward.split_k and backward.block_k == rows and backward.grid(batch, hidden)[0] > 1
        check_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden))


@pytest.mark.parametrize("batch, seq, hidden", [(20, 9, 500), (37, 6, 100), (100, 5, 200)])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_strict_fp32_split_k_backward_default(cell, batch, seq, hidden):
    """Strict fp32's default backward (3xTF32): split-K with partials 128 units high
    (``plans.X3_SPLIT_K_ROWS``, masked past hidden 500, 100 and 200) at 8 warps, on 16 and 32
    batch rows a program, each batch ending in a partial block."""
    from rnnbench.ops import recurrence

    with matmul_mode("fp32"):
        backward = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda")).backward
        assert backward.split_k and backward.block_k == 128 and backward.num_warps == 8
        check_layer(cell, "fp32", _layer(cell, batch, seq, 5, hidden))


# The split products' relative error bound, tighter than fp32's: as 3xTF32 they measured 2.0-2.4e-7
# at hidden 512-1024 (results/h100/split-products/backward-0b00b00), as 3xFP16 1.4-1.9e-7
# (x3-anatomy/products-df51af5); summing the products in the tensor core across the whole reduction
# (3xTF32's first form) reached 2.3e-6 at 960 rows, a bias this bound sees.
SPLIT_TOLERANCE = 1e-6


@pytest.mark.parametrize("shape", [(960, 4, 1024, 1024, True), (960, 3, 1024, 1024, False), (1000, 4, 1000, 1000, True),
                                   (999, 3, 1030, 1000, False)], ids=["lstm-B32", "gru-B32", "partial", "odd"])
def test_split_gradients_on_the_gpu(shape, monkeypatch):
    """Strict fp32's gradients past the fused launch's limits at hidden 1000-1030
    (``gradients.split_gradients``, ``ops/split_products``: the tensor cores' fp16 products and
    accumulation on the device) against float64, taken by ``layer_gradients``; whole 128-row tiles
    and a half-padded one at 960 rows, partial ones elsewhere."""
    from rnnbench.ops import gradients

    taken = []
    real = gradients.split_gradients
    monkeypatch.setattr(gradients, "split_gradients", lambda *a: (taken.append(1), real(*a))[1])
    rows, gates, input_size, hidden, same = shape
    gen = torch.Generator(device="cuda").manual_seed(0)
    draw = lambda *size: torch.randn(size, generator=gen, device="cuda")  # noqa: E731
    d_gx = draw(rows, gates * hidden)
    tensors = [d_gx, d_gx if same else draw(rows, gates * hidden), draw(rows, input_size), draw(rows, hidden),
               draw(gates * hidden, input_size)]
    got = gradients.layer_gradients(*tensors, (True,) * 5, "tf32x3", False)
    assert taken == [1]
    wide = [t.double() for t in tensors]
    ref = gradients.reference_gradients(wide[0], wide[0] if same else wide[1], *wide[2:], (True,) * 5)
    for field in ("dx", "dw_ih", "dw_hh", "db_ih", "db_hh"):
        err = relative_error(getattr(got, field), getattr(ref, field))
        assert err <= SPLIT_TOLERANCE, f"{field}: {err:.3g}"


def test_gradients_take_the_splits_eagerly_and_captured(monkeypatch):
    """At theano's batch 128, hidden 512 (2.4e10 FLOP, 64 tiles of each weight gradient) strict
    fp32's gradients are the split products eagerly and in a graph's capture
    (``gradients.splits_pay``), both against float64."""
    from rnnbench.ops import gradients

    taken = []
    real = gradients.split_gradients
    monkeypatch.setattr(gradients, "split_gradients", lambda *a: (taken.append("split"), real(*a))[1])
    gen = torch.Generator(device="cuda").manual_seed(0)
    d_gx, x, h = (torch.randn(3840, n, generator=gen, device="cuda") for n in (2048, 512, 512))
    w_ih = torch.randn(2048, 512, generator=gen, device="cuda") * 512 ** -0.5
    want = vars(gradients.reference_gradients(*(t.double() for t in (d_gx, d_gx, x, h, w_ih)), (True,) * 5))
    with matmul_mode("fp32"):
        call = lambda: tuple(vars(gradients.layer_gradients(d_gx, d_gx, x, h, w_ih, (True,) * 5, "tf32x3",  # noqa: E731
                                                            False)).values())
        eager = call()
        assert taken == ["split"]
        captured = graphed(call)()
    assert taken == ["split"] * 5  # (three warm-ups on a side stream, then the capture)
    for results in (eager, captured):
        for got, (field, ref) in zip(results, want.items()):
            assert relative_error(got, ref) <= SPLIT_TOLERANCE, field


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_strict_fp32_layer_at_hidden_1024(cell):
    """Theano's strict fp32 layer at batch 32, hidden 1024 (its backward's products by
    ``split_gradients``, its projection from split operands past SPLIT_MIN_FLOP): output, final
    states and every gradient against float64."""
    from rnnbench.ops import gradients

    assert not gradients.fused(960, GATES[cell] * 1024, 1024, 1024, gradients.EVEN_FUSED_MAX_FLOP["tf32x3"])
    assert gradients.splits_pay(960, GATES[cell] * 1024, 1024, 1024)
    check_layer(cell, "fp32", _layer(cell, 32, 30, 1024, 1024))


@pytest.mark.parametrize("cell, dtype, batch, hidden", [("lstm", "fp32", 100, 1000), ("gru", "fp32", 200, 500),
                                                      ("gru", "tf32", 128, 1000), ("lstm", "tf32", 255, 512)])
def test_fp32_weights_at_64_batch_rows_on_one_warpgroup(cell, dtype, batch, hidden):
    """fp32 weights at 64 batch rows a program: the forward on 4 warps (``plans.FP32_WIDE_FORWARD_WARPS``),
    and strict fp32's split-K backward (at hidden 500) too (``X3_SPLIT_K_WIDE_WARPS``); each batch
    and width but one ending in a partial block. (TF32 at hidden 1000 would take fp16 operands,
    ``Plan.half_operands``: kept on fp32 weights here.)"""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype), plan_override(forward_half_operands=False):
        launch = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda"))
        assert (launch.forward.block_b, launch.forward.block_h, launch.forward.num_warps) == (64, 16, 4)
        backward = launch.backward
        assert backward.num_warps == (4 if dtype == "fp32" and backward.split_k else 8)
        check_layer(cell, dtype, _layer(cell, batch, 7, 5, hidden))


@pytest.mark.parametrize("with_h0", [True, False], ids=["h0", "no-h0"])
@pytest.mark.parametrize("cell, batch, hidden, level", [("lstm", 20, 100, None), ("gru", 37, 128, None),
                                                        ("rnn_tanh", 20, 500, 1), ("lstm", 100, 1000, 2),
                                                        ("gru", 3, 500, 1), ("rnn_relu", 129, 300, 1),
                                                        ("gru", 255, 512, 2), ("lstm", 100, 1000, 4),
                                                        ("gru", 3, 500, 4), ("gru", 255, 512, 4),
                                                        ("rnn_tanh", 20, 500, 4)])
def test_strict_fp32_forward_splits_h_once(cell, batch, hidden, level, with_h0):
    """Strict fp32's forward with h split into TF32 high parts and remainders once
    (``Plan.split_once``, the default where the weights stream; forced where they are resident,
    ``level`` None): h_t published split in two slots, with h0 (split before a barrier of its own)
    and without; the weights resident (split into shared memory), streamed and split in the step,
    or streamed from a split copy (``Plan.split_w_once``, level 2, at 64 batch rows a program);
    streamed forwards in 3xFP16 (``Plan.split_fp16``, level 4, the default but for relu's; levels 1
    and 2 are then the others' without it). Its errors against float64 must stay at fp32's: a
    lost remainder would leave TF32's (about 1e-3)."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import split_once_level

    tensors = _layer(cell, batch, 9, 5, hidden)
    if not with_h0:
        tensors[1] = tensors[2] = None
    # (forced: on the tensor-core plan, where the FMA forward would be the default)
    forced = dict(split_once=True, forward_fma=False) if level is None else {}
    if level in (1, 2) and cell != "rnn_relu":
        forced = dict(split_fp16=False)
    with matmul_mode("fp32"), plan_override(**forced):
        launch = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda"))
        assert launch.precision == "tf32x3" and split_once_level(launch.forward) == (level or 1)
        assert launch.forward.w_resident == (level is None)
        got = _outputs_and_grads(recurrent_layer, cell, tensors, torch.float32)
    # The reference starts from zeros where we pass no h0 (c0): drop its gradients to them.
    absent = [k for k in (1, 2) if tensors[k] is None and (k == 1 or cell == "lstm")]
    ref_inputs = [torch.zeros(batch, hidden) if k in absent else x for k, x in enumerate(tensors)]
    ref = _outputs_and_grads(naive_layer, cell, ref_inputs, torch.float64)
    outputs = 3 if cell == "lstm" else 2
    ref = ref[:outputs + 1] + ref[outputs + 1 + len(absent):]  # outputs, d_x, [d_h0, d_c0], weights...
    assert len(got) == len(ref)
    for k, (a, b) in enumerate(zip(got, ref)):
        err = relative_error(a, b)
        assert err <= tolerance(cell, "fp32"), f"tensor {k}: relative error {err:.3g}"


# 3xFP16's forward against float64: 3xTF32's split-once forwards measured 0.6-1.2e-6 on the H100
# (results/h100/triton-lane-13); without a remainder a product keeps 11 bits (about 5e-4).
SPLIT_FP16_FORWARD_TOLERANCE = 1e-5


@pytest.mark.parametrize("scale", ["plain", "h0_2^20", "w_2^-30"])
@pytest.mark.parametrize("cell, batch, hidden", [("lstm", 100, 1000), ("gru", 128, 1024), ("lstm", 20, 500),
                                                 ("gru", 3, 500), ("rnn_tanh", 20, 500), ("rnn_tanh", 100, 1000)])
def test_strict_fp32_forward_in_3xfp16(cell, batch, hidden, scale):
    """The LSTM's, GRU's and tanh RNN's streamed strict fp32 forward in 3xFP16 (``Plan.split_fp16``, the
    default there) at 64 and 16 batch rows a program: output and final states against float64 within
    :data:`SPLIT_FP16_FORWARD_TOLERANCE`, with h0 of one batch row at 2^20 (W_hh times 2^-20:
    past fp16's 65504 unscaled) and with W_hh at 2^-30 of its size (below fp16's subnormals); the
    whole layer's gradients at fp32's tolerance."""
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import split_once_level

    tensors = _layer(cell, batch, 9, 5, hidden)
    if scale == "h0_2^20":
        tensors[1][batch // 2] *= 2.0 ** 20
        tensors[4] = tensors[4] * 2.0 ** -20
    elif scale == "w_2^-30":
        tensors[4] = tensors[4] * 2.0 ** -30
    with matmul_mode("fp32"):
        launch = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda"))
        assert split_once_level(launch.forward) == 4 and launch.forward.split_fp16
        with torch.no_grad():
            got = recurrent_layer(cell, *[None if x is None else x.cuda() for x in tensors])
    got = [o for o in got if o is not None]
    with torch.no_grad():
        ref = [o for o in naive_layer(cell, *[None if x is None else x.cuda().double() for x in tensors])
               if o is not None]
    for k, (a, b) in enumerate(zip(got, ref)):
        err = relative_error(a, b)
        assert err <= SPLIT_FP16_FORWARD_TOLERANCE, f"output {k}: relative error {err:.3g}"
    check_layer(cell, "fp32", tensors)


@pytest.mark.parametrize("scale", ["plain", "h0_1e6", "w_1e-7"])
@pytest.mark.parametrize("split", ["tf32", "fp16"])
@pytest.mark.parametrize("cell, batch, hidden", [("rnn_tanh", 20, 100), ("rnn_relu", 37, 128), ("rnn_tanh", 3, 37),
                                                 ("rnn_relu", 1, 64)])
def test_on_chip_rnn_splits_once(cell, batch, hidden, split, scale):
    """The on-chip RNN's strict fp32 forward from operands split once (``Plan.on_chip_split``):
    3xTF32, and 3xFP16 with its power-of-two scales, where fp16 alone would overflow (h0 10^6) or
    lose the weights to subnormals (10^-7). A lost remainder would leave a 2^-11 product's error
    (about 5e-4), over fp32's tolerance."""
    from rnnbench.ops import recurrence

    tensors = _layer(cell, batch, 9, 5, hidden)
    if scale == "h0_1e6":
        tensors[1] = tensors[1] * 2e6
    elif scale == "w_1e-7":
        tensors[4] = tensors[4] * 1e-7
    with matmul_mode("fp32"), plan_override(on_chip_split=split):
        launch = recurrence.layer_launch(cell, batch, hidden, torch.float32, torch.device("cuda"))
        assert launch.forward.h_on_chip and launch.forward_meta["CHIP_SPLIT"] == {"tf32": 1, "fp16": 2}[split]
    with plan_override(on_chip_split=split):
        check_layer(cell, "fp32", tensors)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seq, batch, inputs, width", [(1, 1, 3, 37), (7, 3, 5, 148), (30, 20, 100, 400),
                                                       (30, 32, 128, 384), (2, 65, 70, 65)])
def test_input_projection_on_the_gpu(seq, batch, inputs, width, dtype):
    """Our launch of the input projection (``ops/projection.py``) in each precision it runs (3xTF32
    for strict fp32), partial tiles at every edge, against float64 on the operands as it sees them."""
    from rnnbench.ops import projection
    from rnnbench.ops.plans import dot_precision

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(seq, batch, inputs, generator=gen).to("cuda", TORCH_DTYPE[dtype])
    w = (torch.randn(width, inputs, generator=gen) * inputs ** -0.5).to("cuda", TORCH_DTYPE[dtype])
    assert 2 * seq * batch * width * inputs <= projection.PROJECTION_MAX_FLOP
    with matmul_mode(dtype):
        got = projection.input_projection(x, w, dot_precision(w.dtype), False)
    assert got.dtype == w.dtype and got.shape == (seq, batch, width)
    assert relative_error(got, x.double() @ w.double().t()) <= tolerance("lstm", dtype)


def test_a_captured_projection_is_cublas(monkeypatch):
    """Inside a CUDA graph's capture the projection is F.linear (cuBLAS' kernel is faster on the
    device, and the host time our launch saves does not recur); eagerly, at the same size, ours."""
    from rnnbench.ops import projection

    launched = []
    real = projection._PROJECTION
    monkeypatch.setattr(projection, "_PROJECTION", lambda *a: (launched.append(1), real(*a)))
    x = torch.randn(30, 20, 100, device="cuda")
    w = torch.randn(100, 100, device="cuda")
    eager = projection.input_projection(x, w, "tf32x3", False)
    assert launched == [1]
    replay = graphed(lambda: (projection.input_projection(x, w, "tf32x3", False),))
    (captured,) = replay()
    assert launched == [1] * 4  # the three warm-up calls on a side stream are eager; the capture is not
    assert relative_error(captured, eager) <= tolerance("lstm", "fp32")


@pytest.mark.parametrize("dtype, batch, captured_ours", [("fp32", 32, True), ("tf32", 32, True), ("bf16", 32, False),
                                                         ("fp32", 128, True)])
def test_a_captured_projection_of_whole_tiles_is_ours(monkeypatch, dtype, batch, captured_ours):
    """A shape that takes the unmasked path (theano's LSTM at batch 32, hidden 512: 2.0e9 FLOP,
    past PROJECTION_MAX_FLOP) is ours eagerly, and in fp32 and TF32 in a graph's capture too,
    where ours is the faster kernel (results/h100/products); in bf16 the capture keeps cuBLAS'.
    In strict fp32 ours past EVEN_MAX_FLOP too (batch 128: 8.1e9), in the capture as 3xFP16 from
    split operands there (``split_projection``, ``SPLIT_MIN_FLOP``). Checked against float64 both ways."""
    from rnnbench.ops import projection
    from rnnbench.ops.plans import dot_precision

    launched = []
    real, real_split = projection._PROJECTION, projection.split_projection
    monkeypatch.setattr(projection, "_PROJECTION", lambda *a: (launched.append("tiles"), real(*a)))
    monkeypatch.setattr(projection, "split_projection", lambda *a: (launched.append("split"), real_split(*a))[1])
    x = torch.randn(30, batch, 512, device="cuda").to(TORCH_DTYPE[dtype])
    w = (torch.randn(2048, 512, device="cuda") * 512 ** -0.5).to(TORCH_DTYPE[dtype])
    flop = 2 * x.numel() * w.shape[0]
    assert (flop > projection.EVEN_MAX_FLOP) is (batch == 128)
    ours = {c: "split" if dtype == "fp32" and projection.splits_pay(30 * batch, 2048, 512, c) else "tiles"
            for c in (False, True)}
    assert ours[True] == ("split" if (dtype, batch) == ("fp32", 128) else "tiles")
    reference = x.double() @ w.double().t()
    with matmul_mode(dtype):
        precision = dot_precision(w.dtype)
        assert relative_error(projection.input_projection(x, w, precision, False), reference) <= tolerance("lstm", dtype)
        (captured,) = graphed(lambda: (projection.input_projection(x, w, precision, False),))()
    # eager, three warm-ups (eager, on a side stream), the capture if ours
    assert launched == [ours[False]] * 4 + [ours[True]] * captured_ours
    assert relative_error(captured, reference) <= tolerance("lstm", dtype)


@pytest.mark.parametrize("seq, batch, inputs, width", [(7, 3, 37, 100), (30, 20, 500, 2000), (30, 32, 1024, 3072),
                                                       (200, 128, 1024, 4096)])
def test_strict_fp32_projection_from_split_operands(seq, batch, inputs, width):
    """Strict fp32's projection by 3xFP16 (``split_projection``: the tensor cores' fp16 products
    and accumulation on the device), partial tiles (glample's hidden 500) and whole ones, eagerly
    and captured, against float64 at the split products' bound; taken by ``input_projection``
    eagerly from SPLIT_MIN_FLOP's eager limit (200 steps at batch 128)."""
    from rnnbench.ops import projection

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(seq, batch, inputs, generator=gen).cuda()
    w = (torch.randn(width, inputs, generator=gen) * inputs ** -0.5).cuda()
    reference = x.double() @ w.double().t()
    got = projection.split_projection(x, w)
    assert got.shape == (seq, batch, width) and got.dtype == torch.float32 and got.is_contiguous()
    assert relative_error(got, reference) <= SPLIT_TOLERANCE
    (captured,) = graphed(lambda: (projection.split_projection(x, w),))()
    assert torch.equal(captured, got)
    if projection.splits_pay(seq * batch, width, x.shape[-1], captured=False):
        assert torch.equal(projection.input_projection(x, w, "tf32x3", False), got)


@pytest.mark.parametrize("batch, seq, hidden", [(20, 9, 100), (16, 40, 768), (32, 30, 1024)])
@pytest.mark.parametrize("dtype", [d for d in DTYPES if d in ("bf16", "fp16")])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_split_k_backward_with_half_partials(cell, dtype, batch, seq, hidden):
    """The split-K backward with its partials stored in 16 bits (``Plan.half_partials``)."""
    from rnnbench.ops import recurrence

    with plan_override(split_k=True, backward_half_partials=True):
        backward = recurrence.layer_launch(cell, batch, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).backward
        assert backward.split_k and backward.half_partials and backward.grid(batch, hidden)[0] > 1
        check_layer(cell, dtype, _layer(cell, batch, seq, 5, hidden))


@pytest.mark.parametrize("hidden_size", [20, 37, 100])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_layer_with_h_on_chip(cell, dtype, hidden_size):
    """The on-chip plan on tensor cores, forced in both directions wherever its tile fits in shared
    memory: one program per 16 batch rows holds every unit and keeps h (backward, the gate
    gradients) in registers, without barriers; batch 20 is two such programs. The barrier
    counters stay untouched (zero). (The RNN's fp32 default is on FMA units: below.)"""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype), plan_override(h_on_chip=True, fma=False):
        try:
            launch = recurrence.layer_launch(cell, 20, hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))
        except ValueError as err:  # fp32 tiles of four gates at 100 units: 256 KB
            assert "does not fit" in str(err)
            pytest.skip(str(err))
        assert launch.forward.h_on_chip and launch.backward.h_on_chip
        assert launch.forward.grid(20, hidden_size) == (1, 2)
        check_layer(cell, dtype, _layer(cell, 20, 9, 5, hidden_size))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


def _check_fma_layers(cell, dtype, hidden_size, backward_fma: bool):
    """Under the plan in force (an FMA plan asked for): a program per batch row at batch 1, 3 and
    past one program per multiprocessor, and with lengths (a row ending early, one empty); output,
    final states and every gradient against float64 (``check_layer``). ``backward_fma``: whether
    the backward runs on FMA units too (the RNN's) or on tensor cores (the LSTM's and GRU's)."""
    from rnnbench.ops import recurrence

    for batch in (1, 3, SMS + 5):
        launch = recurrence.layer_launch(cell, batch, hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))
        assert launch.forward.fma and launch.backward.fma == backward_fma
        assert launch.forward.grid(batch, hidden_size) == (1, batch)
        check_layer(cell, dtype, _layer(cell, batch, 7, 5, hidden_size))
    check_layer(cell, dtype, _layer(cell, 3, 9, 5, hidden_size), lengths=torch.tensor([4, 9, 0]))


@pytest.mark.parametrize("hidden_size", [1, 37, 100, 128])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["rnn_tanh", "rnn_relu"])
def test_rnn_on_fma_units(cell, dtype, hidden_size):
    """The RNN on FMA units (``Plan.fma``, ``ops/rnn/fma.py``), forced in both directions: a program
    per batch row, W_hh in registers (``_check_fma_layers``); the barrier counters untouched. The
    default in every dtype up to hidden 128 and one row per multiprocessor (so
    ``test_layer_without_initial_states`` runs it without h0). One unit in TF32 is not checked: its
    h_n comes from a five-term TF32 input projection (the recurrence's products are fp32) and came
    out 0.12 off relatively in ``rnn_relu`` (H100), a scalar whose terms cancel; 37 units and more
    are."""
    from rnnbench.ops import recurrence

    if dtype == "tf32" and hidden_size == 1:
        pytest.skip("one unit in TF32: a scalar h_n from cancelling TF32 input products")
    default = recurrence.layer_launch(cell, 20, hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))
    assert default.forward.fma and default.backward.fma
    with matmul_mode(dtype), plan_override(fma=True):
        _check_fma_layers(cell, dtype, hidden_size, backward_fma=True)
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())


@pytest.mark.parametrize("hidden_size", [1, 37, 100, 128])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_gated_forward_on_fma_units(cell, dtype, hidden_size):
    """The LSTM's and GRU's forwards on FMA units (``Plan.fma``, ``ops/<cell>/fma.py``, Gluon),
    forced: a program per batch row, W_hh^T in registers and shared memory; the backward on tensor
    cores reads what they saved (``_check_fma_layers``), and without initial states; asked for in
    both directions, refused. The default forward in every dtype at batch 20
    (``plans.gated_fma_default``). One unit in TF32 is not checked, as in ``test_rnn_on_fma_units``:
    the LSTM's h_n at batch 1 came out 0.015 off relatively (H100), a scalar from a five-term TF32
    input projection (the recurrence's products here are fp32)."""
    from rnnbench.ops import gluon_common, recurrence

    if not gluon_common.AVAILABLE:
        pytest.skip("Gluon kernels need Triton 3.6")
    if dtype == "tf32" and hidden_size == 1:
        pytest.skip("one unit in TF32: a scalar h_n from cancelling TF32 input products")
    with matmul_mode(dtype):
        default = recurrence.layer_launch(cell, 20, hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))
    assert default.forward.fma and not default.backward.fma
    with matmul_mode(dtype), plan_override(forward_fma=True):
        _check_fma_layers(cell, dtype, hidden_size, backward_fma=False)
        check_without_initial_states(cell, dtype, _layer(cell, 3, 7, 5, hidden_size))
    with pytest.raises(ValueError, match="the LSTM's and GRU's forwards"), plan_override(fma=True):
        recurrence.layer_launch(cell, 3, hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))


@pytest.mark.parametrize("cell", ["rnn_tanh", "lstm", "gru"])
def test_a_forward_on_fma_units_waits_for_a_long_projection(cell):
    """A forward on FMA units launched by programmatic dependent launch starts while the input
    projection's programs run (they let it: ``DEPENDENTS``) and must wait for them before it reads
    ``x_proj``: here a projection long enough (input 4096 at batch 32, 30 steps: 90 tiles of our
    3xTF32 kernel, each 4096 deep) that a read before its end reads another call's ``x_proj`` or
    none. Fresh inputs each call; output, final states and gradients against float64; the forward
    was launched so (its compiled kernel's ``launch_pdl``)."""
    from rnnbench.ops import gluon_common, launch, recurrence

    if cell != "rnn_tanh" and not gluon_common.AVAILABLE:
        pytest.skip("Gluon kernels need Triton 3.6")
    if not launch.dependent_launch(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs sm_90")
    forward = {"rnn_tanh": recurrence._RNN_FORWARD_FMA, "lstm": recurrence._LSTM_FORWARD_FMA,
               "gru": recurrence._GRU_FORWARD_FMA}[cell]
    forward._compiled.clear()  # (the RNN's producing forward, launched plainly, compiled by other tests)
    with plan_override(forward_produce=False):  # (the RNN's default projects in its own launch)
        assert recurrence.layer_launch(cell, 32, 128, torch.float32, torch.device("cuda")).forward.fma
        for seed in range(3):
            check_layer(cell, "fp32", _layer(cell, 32, 30, 4096, 128, seed=seed))
    assert forward._compiled and all(kernel.metadata.launch_pdl for kernel, _, _ in forward._compiled.values())


@pytest.mark.parametrize("dtype", ["fp32", "tf32", "bf16"])
def test_the_rnns_forward_waits_for_its_own_producers(dtype):
    """The RNN's forward with its projection computed in its own launch (``Plan.produce``, the
    default at batch 32, hidden 128) on the GPU, where producers and rows run at once: the rows
    must wait for the producers' count before they read ``x_proj``. A projection long enough (input
    4096, 30 steps: 30 tiles of 64 x 64, each 4096 deep) that a read before its end reads the
    scratch of another call; fresh inputs each call; output, final states and gradients against
    float64; the counters left at zero (or the next call's rows would not wait); and the forward's
    outputs bit for bit those of the projection launched before it (the same tiles)."""
    from rnnbench.ops import recurrence

    with matmul_mode(dtype):
        assert recurrence.layer_launch("rnn_tanh", 32, 128, TORCH_DTYPE[dtype], torch.device("cuda")).forward.produce
    for seed in range(3):
        check_layer("rnn_tanh", dtype, _layer("rnn_tanh", 32, 30, 4096, 128, seed=seed))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())
    x, h0, _, *weights = [None if t is None else t.cuda().to(TORCH_DTYPE[dtype])
                          for t in _layer("rnn_tanh", 32, 30, 4096, 128, seed=3)]
    got = {}
    for produce in (True, False):
        with matmul_mode(dtype), plan_override(forward_produce=produce), torch.no_grad():
            got[produce] = recurrent_layer("rnn_tanh", x, h0, None, *weights)
    assert all(torch.equal(a, b) for a, b in zip(got[True], got[False]) if a is not None)


@pytest.mark.parametrize("dtype", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_the_gated_forwards_wait_for_their_own_producers(cell, dtype):
    """The LSTM's and GRU's forwards on FMA units with their projection computed in their own
    launch (``Plan.produce``, ``ops/gluon_produce.py``: the default at batch 32, hidden 128 on
    tensor cores) on the GPU, where producers and rows run at once: the rows must wait for every
    tile before they read ``x_proj``. A projection long enough (input 2048, 30 steps: the GRU's 90
    tiles of 64 x 64, the LSTM's 60 of 64 x 128, each 2048 deep) that a read before its end reads
    the scratch of another call; fresh inputs each call; output, final states and gradients
    against float64; the counters left at zero (or the next call's rows would not wait); and the
    outputs within the dtype's tolerance of those with the projection launched before it (other
    instructions, so not bit for bit). Strict IEEE fp32 (no tile of it) refuses to produce."""
    from rnnbench.ops import gluon_common, recurrence

    if not gluon_common.AVAILABLE:
        pytest.skip("Gluon kernels need Triton 3.6")
    cuda = torch.device("cuda")
    with matmul_mode(dtype):
        launch = recurrence.layer_launch(cell, 32, 128, TORCH_DTYPE[dtype], cuda)
        assert launch.forward.produce and recurrence.produces(launch, torch.empty(30, 32, 2048, device=cuda))
    for seed in range(3):
        check_layer(cell, dtype, _layer(cell, 32, 30, 2048, 128, seed=seed))
    torch.cuda.synchronize()
    assert all(not buf.any() for buf in COUNTERS.values())
    x, h0, c0, *weights = [None if t is None else t.cuda().to(TORCH_DTYPE[dtype])
                           for t in _layer(cell, 32, 30, 2048, 128, seed=3)]
    got = {}
    for produce in (True, False):
        with matmul_mode(dtype), plan_override(forward_produce=produce), torch.no_grad():
            got[produce] = recurrent_layer(cell, x, h0, c0, *weights)
    for a, b in zip(got[True], got[False]):
        if a is not None:
            assert relative_error(a, b) <= tolerance(cell, dtype)
    with pytest.raises(ValueError, match="no IEEE fp32 tile"):
        recurrence.choose_plan(32, 128, GATES[cell], torch.float32, cuda, precision="ieee", produce=True)


@pytest.mark.parametrize("scaled", ["drawn", "large", "small"])
@pytest.mark.parametrize("hidden_size", [37, 100, 128])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_tf32_forward_on_fma_units_holds_scaled_fp16_weights(cell, hidden_size, scaled):
    """TF32's FMA forward holding W_hh^T as fp16, each unit's row of every gate divided by a power
    of two first (``Plan.half_weights``, ``gluon_fma.HALF_SHIFT``), asked for: the default in TF32
    where 16-bit weights split k (the GRU from hidden 65, the LSTM from 101), never in strict
    fp32. Everything the layer returns within TF32's tolerance of float64 at batch 1, 3 and 20,
    with W_hh as drawn, with its first row (unit 0's first gate) times 2^24 (past fp16's
    65504: unscaled, infinities), and with all of W_hh times 2^-20 and h0 divided by 2^20 (below
    fp16's normal range: unscaled, a bit or two a weight). (All of W_hh large saturates the gates
    at pre-activations whose TF32 rounding alone moves them by more than the tolerance: not a
    well-posed check. The GRU at hidden 37 holds every chunk in registers, in fp32: nothing
    rounded there.)"""
    from rnnbench.ops import gluon_common, recurrence

    if not gluon_common.AVAILABLE:
        pytest.skip("Gluon kernels need Triton 3.6")
    with matmul_mode("tf32"):
        launch = recurrence.layer_launch(cell, 20, hidden_size, torch.float32, torch.device("cuda"))
    assert launch.forward.fma and launch.forward.half_weights == (hidden_size >= (65 if cell == "gru" else 101))
    with matmul_mode("fp32"):
        assert not recurrence.layer_launch(cell, 20, hidden_size, torch.float32, torch.device("cuda")).forward.half_weights
    for batch in (1, 3, 20):
        tensors = _layer(cell, batch, 7, 5, hidden_size)
        if scaled == "large":
            tensors[4][0] *= 2.0 ** 24
        elif scaled == "small":
            tensors[1] = tensors[1] * 2.0 ** 20
            tensors[4] = tensors[4] * 2.0 ** -20
        with matmul_mode("tf32"), plan_override(forward_half_weights=True):
            assert recurrence.layer_launch(cell, batch, hidden_size, torch.float32, torch.device("cuda")).forward.half_weights
        with plan_override(forward_half_weights=True):
            check_layer(cell, "tf32", tensors)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_fast_activations_are_live_and_accurate(cell, dtype):
    """The default forward of bf16, fp16 and TF32 computes its nonlinearities on the MUFU: its
    output differs from the exact activations' (``fast_activations=False``) by about the MUFU's
    2^-11 and both match the float64 reference; strict fp32 is bit for bit the same either way (no
    fast path). On chip (hidden 37) and exchanged (hidden 300)."""
    from rnnbench.ops import recurrence

    for hidden in (37, 300):
        tensors = _layer(cell, 20, 9, 5, hidden)
        with matmul_mode(dtype):
            fast = recurrence.layer_launch(cell, 20, hidden, TORCH_DTYPE[dtype], torch.device("cuda")).forward
            assert fast.fast_activations == (dtype != "fp32")
            check_layer(cell, dtype, tensors)
            with plan_override(fast_activations=False):
                check_layer(cell, dtype, tensors)
            x = [None if t is None else t.to("cuda", TORCH_DTYPE[dtype]) for t in tensors]
            with torch.no_grad():
                out_fast = recurrent_layer(cell, *x)[0]
                with plan_override(fast_activations=False):
                    out_exact = recurrent_layer(cell, *x)[0]
        diff = relative_error(out_fast, out_exact)
        if dtype == "fp32" or cell == "rnn_relu":  # no tanh or sigmoid on the fast path there
            assert diff == 0.0
        elif dtype == "bf16" and cell == "rnn_tanh":
            # h is rounded to bf16 (2^-9) every step and nothing else carries state: the MUFU's
            # differences, mostly far below 2^-11, vanished in the rounding on the H100 (diff 0).
            assert diff < tolerance(cell, dtype), diff
        else:  # the LSTM's fp32 cell state and the GRU's fp32 h carry them; TF32 and fp16 resolve them
            assert 0.0 < diff < tolerance(cell, dtype), diff


def test_more_batch_rows_than_on_chip_programs_can_hold():
    """Past 16 batch rows per multiprocessor the on-chip plan's programs could not all be resident:
    the default plan is then the exchange plan with wider batch blocks, and the call runs."""
    from rnnbench.ops import recurrence

    batch = 16 * SMS + 1
    launch = recurrence.layer_launch("rnn_tanh", batch, 100, torch.bfloat16, torch.device("cuda"))
    assert not launch.forward.h_on_chip
    assert recurrence.layer_launch("rnn_tanh", 16 * SMS, 100, torch.bfloat16, torch.device("cuda")).forward.h_on_chip
    check_layer("rnn_tanh", "bf16", _layer("rnn_tanh", batch, 5, 8, 100))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_layer_without_initial_states(cell, dtype):
    """h0 = c0 = None on the default plan: zeros inside the kernel."""
    check_without_initial_states(cell, dtype, _layer(cell, 20, 9, 5, 100))


def check_without_initial_states(cell, dtype, tensors):
    """:func:`check_layer` with h0 = c0 = None, against the float64 layer from zeros."""
    batch, hidden = tensors[1].shape
    with matmul_mode(dtype):
        got = _outputs_and_grads(recurrent_layer, cell, [tensors[0], None, None, *tensors[3:]], TORCH_DTYPE[dtype])
    zeros = [tensors[0], torch.zeros(batch, hidden), torch.zeros(batch, hidden) if cell == "lstm" else None,
             *tensors[3:]]
    ref = _outputs_and_grads(naive_layer, cell, [None if x is None else x.to(TORCH_DTYPE[dtype]) for x in zeros],
                             torch.float64)
    outputs = len(got) - 5  # output, h_n (c_n); then the gradients of x and the four weights
    ref = ref[:outputs + 1] + ref[-4:]  # without the reference's h0 / c0 gradients
    for k, (a, b) in enumerate(zip(got, ref)):
        assert relative_error(a, b) <= tolerance(cell, dtype), k


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "fp32"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_widest_grid_long_sequence(cell, dtype):
    """The default plan at hidden 1024, batch 64: every multiprocessor busy, 300 barriers."""
    p = plan(cell, 64, 1024, TORCH_DTYPE[dtype], torch.device("cuda"))
    nh, nb = p.grid(64, 1024)
    assert nh * nb <= SMS
    check_layer(cell, dtype, _layer(cell, 64, 300, 64, 1024))


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_streamed_forward_at_64_rows(cell, dtype):
    """The default plan at batch 128, hidden 1024 in 16 bits: 64 batch rows a program, the forward's
    weights streamed from L2 (plans.STREAM_FORWARD_ROWS), 128 programs, 40 barriers."""
    p = plan(cell, 128, 1024, TORCH_DTYPE[dtype], torch.device("cuda"))
    assert (p.block_b, p.w_resident) == (64, False)
    check_layer(cell, dtype, _layer(cell, 128, 40, 64, 1024))


MODULES = {"lstm": (rnn.LSTM, torch.nn.LSTM, {}), "gru": (rnn.GRU, torch.nn.GRU, {}),
           "rnn_tanh": (rnn.RNN, torch.nn.RNN, {"nonlinearity": "tanh"}),
           "rnn_relu": (rnn.RNN, torch.nn.RNN, {"nonlinearity": "relu"})}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", CELLS)
def test_modules_match_torch_nn_on_cuda(cell, dtype):
    ours_cls, theirs_cls, extra = MODULES[cell]
    kwargs = dict(num_layers=2, bidirectional=True, batch_first=True)
    torch.manual_seed(0)
    theirs = theirs_cls(48, 96, **extra, **kwargs).to("cuda", TORCH_DTYPE[dtype])
    ours = ours_cls(48, 96, **extra, **kwargs).to("cuda", TORCH_DTYPE[dtype])
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(5, 40, 48, device="cuda", dtype=TORCH_DTYPE[dtype])
    results = []
    with matmul_mode(dtype), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # auto on CUDA takes the kernels: no fallback warning
        for module in (theirs, ours):
            xi = x.clone().requires_grad_()
            out, finals = module(xi)
            loss = out.float().pow(2).sum() + sum(f.float().sum() for f in (finals if cell == "lstm" else [finals]))
            grads = torch.autograd.grad(loss, [xi, *module.parameters()])
            results.append([out, *(finals if cell == "lstm" else [finals]), *grads])
    # Both sides round differently; compare with twice the tolerance against float64.
    tol = 2 * tolerance(cell, dtype)
    for k, (a, b) in enumerate(zip(*results)):
        assert relative_error(b, a) <= tol, (k, relative_error(b, a))


# A process that never used cuBLAS before: our module warmed up eagerly (where our own projection
# launch runs), then its forward captured in a CUDA graph (where F.linear runs), then replayed.
FIRST_CAPTURE = """
import sys, torch
import rnnbench.nn as rnn
torch.backends.cuda.matmul.allow_tf32 = False
module = getattr(rnn, sys.argv[1])(100, 100, backend="triton").cuda()
x = torch.randn(30, 20, 100, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):
        eager = module(x)[0]
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph), torch.no_grad():
    out = module(x)[0]
graph.replay()
torch.cuda.synchronize()
sys.exit(0 if torch.allclose(out, eager, atol=1e-5) else 3)
"""


@pytest.mark.parametrize("module", ["LSTM", "RNN"])
def test_first_capture_in_a_process_that_never_used_cublas(module):
    """Our eager forward at glample's sizes (strict fp32) projects by our own launch (the
    producers' of ``Plan.produce``, both cells here), and a captured one by cuBLAS
    (``projection.input_projection``): a graph captured in a process where only our eager calls ran
    had to create cuBLAS' handle inside the capture, which CUDA refuses
    (CUBLAS_STATUS_NOT_INITIALIZED, seen in ``benchmarks/host_time.py --parts engine``, and again
    when the LSTM's forward began to produce). The eager path makes the handle first now, producing
    or not. A fresh interpreter: in this one, cuBLAS is long made."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", FIRST_CAPTURE, module], capture_output=True, text=True, timeout=300,
                          cwd=str(Path(__file__).resolve().parents[2]), env={**os.environ, "PYTHONPATH": "src"})
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_modules_run_under_torchs_make_graphed_callables(cell):
    """The documented way to take our host time per call away: torch.cuda.make_graphed_callables
    captures the module's forward and backward once; replays give the eager module's output,
    final states and gradients (fresh inputs copied into the captured ones each call)."""
    ours_cls, _, extra = MODULES[cell]
    torch.manual_seed(0)
    module = ours_cls(48, 96, num_layers=2, **extra, backend="triton").to("cuda", torch.bfloat16)
    sample = torch.randn(30, 32, 48, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(module, (sample,))
    for _ in range(2):  # a second replay after the first: the barrier counters came back to zero
        x = torch.randn_like(sample).requires_grad_()
        results = []
        for call in (module, graphed):
            xi = x.detach().clone().requires_grad_()
            out, finals = call(xi)
            finals = list(finals) if cell == "lstm" else [finals]
            loss = out.float().pow(2).sum() + sum(f.float().sum() for f in finals)
            grads = torch.autograd.grad(loss, [xi, *module.parameters()])
            results.append([t.detach().clone() for t in (out, *finals, *grads)])
        for k, (eager, replayed) in enumerate(zip(*results)):  # same kernels; reductions may reorder
            assert relative_error(replayed, eager) <= tolerance(cell, "bf16"), (k, relative_error(replayed, eager))


def test_two_graphs_replay_in_turns():
    """Two modules captured in two CUDA graphs on the same capture stream (so their kernels share
    one counter buffer, ops/launch.counters), each warmed up on a side stream of its own, then
    replayed in turns: every replay gives the eager module's output and final states (a kernel
    that left a counter behind, or a buffer freed under a graph, would break the next replay).
    Each module and its input are kept: a graph reads them where they were at capture, and
    ``torch.cuda.graph`` empties the allocator's cache before each capture, so a freed one may no
    longer be mapped."""
    torch.manual_seed(0)
    cases = []
    for cell, hidden in (("lstm", 96), ("gru", 160)):
        cls, _, extra = MODULES[cell]
        module = cls(48, hidden, **extra, backend="triton").to("cuda", torch.bfloat16)
        x = torch.randn(20, 24, 48, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            expected = module(x)
            replay = graphed(lambda module=module, x=x: module(x))
            replay()  # captures both graphs before either is replayed in turn
        cases.append((cell, replay, expected, module, x))
    for _ in range(3):
        for cell, replay, expected, _module, _x in cases:
            captured = replay()
            torch.cuda.synchronize()
            flat = lambda r: [r[0], *(r[1] if cell == "lstm" else [r[1]])]  # noqa: E731  (output, h_n[, c_n])
            for a, b in zip(flat(captured), flat(expected), strict=True):
                assert relative_error(a, b) <= tolerance(cell, "bf16")


def test_a_replaced_counter_buffer_is_never_freed(monkeypatch):
    """A counter buffer too small for a launch is replaced (ops/launch.counters), but a CUDA graph
    captured before may still launch on the old one: it must stay allocated. (Freed, its memory can
    leave the process when ``torch.cuda.graph`` empties the allocator's cache before a later
    capture; `benchmarks/strict_fp32.py --graphed` replayed such a graph into an illegal memory
    access, results/h100/c-launch/README.md.)"""
    import gc
    import weakref

    from rnnbench.ops import launch

    monkeypatch.setattr(launch, "COUNTERS", {})
    monkeypatch.setattr(launch, "RETIRED", [])
    monkeypatch.setattr(launch, "MIN_COUNTERS", 2)
    device = torch.device("cuda")
    old, stream = launch.counters(2, device)
    first = weakref.ref(old)
    del old
    grown, same_stream = launch.counters(100, device)
    gc.collect()
    assert same_stream == stream and grown.numel() >= 100 and not grown.any()
    assert first() is not None, "the replaced buffer was freed"
    assert launch.counters(50, device)[0] is grown  # large enough now: no new buffer


@pytest.mark.parametrize("dtype", DTYPES)
def test_lane_verifies_through_the_runner(dtype, tmp_path):
    cases = [Case(cell=cell, batch_size=4, seq_len=9, input_size=16, hidden_size=32, num_layers=2, dtype=dtype,
                  mode=mode, device="cuda") for cell in CELLS for mode in ("train", "forward")]
    rows = runner.run(cases, [make_lane()], ResultsFile(tmp_path / "r.jsonl"), budget_s=0.02)
    for row in rows:
        assert row["status"] == "ok", f"{row['case_key']}: {row['status']} {row.get('message')}"


def test_cached_launch_specialises_on_alignment():
    """The cached launch (ops/launch.py) keeps one compiled kernel per alignment: a weight that
    starts 2 bytes past a 16-byte boundary, launched after an aligned one of the same shape, must
    not reuse the aligned variant (its vector loads would fault or read the wrong elements)."""
    from rnnbench.ops import launch

    assert not launch.JIT_ONLY
    torch.manual_seed(0)
    t, b, i, h = 7, 3, 16, 40
    x = torch.randn(t, b, i, device="cuda", dtype=torch.bfloat16)
    aligned = [torch.randn(4 * h, i, device="cuda", dtype=torch.bfloat16) * 0.3,
               torch.randn(4 * h, h, device="cuda", dtype=torch.bfloat16) * 0.3]
    flat = torch.empty(aligned[1].numel() + 1, device="cuda", dtype=torch.bfloat16)
    unaligned_w_hh = flat[1:].view(4 * h, h)
    unaligned_w_hh.copy_(aligned[1])
    assert unaligned_w_hh.data_ptr() % 16 != 0
    zeros = torch.zeros(b, h, device="cuda", dtype=torch.float64)
    expected = naive_layer("lstm", x.double(), zeros, zeros, aligned[0].double(), aligned[1].double())
    for w_hh in (aligned[1], unaligned_w_hh, aligned[1]):
        out, h_n, c_n = recurrent_layer("lstm", x, None, None, aligned[0], w_hh)
        torch.cuda.synchronize()
        for got, want in zip((out, h_n, c_n), expected):
            assert relative_error(got, want) <= tolerance("lstm", "bf16")


def test_cached_launch_skips_the_jit_after_the_first_call(monkeypatch):
    """After the first launch of a specialisation the JIT is not called again (that is the host
    time saved), and the results stay right."""
    from rnnbench.ops import recurrence

    calls = []
    jit_run = type(recurrence.lstm_forward_kernel).run
    monkeypatch.setattr(type(recurrence.lstm_forward_kernel), "run",
                        lambda self, *a, **k: calls.append(1) or jit_run(self, *a, **k))
    torch.manual_seed(1)
    t, b, i, h = 5, 9, 24, 72  # a shape no other test launches: the first call is a miss
    x = torch.randn(t, b, i, device="cuda")
    w_ih, w_hh = torch.randn(4 * h, i, device="cuda") * 0.2, torch.randn(4 * h, h, device="cuda") * 0.2
    zeros = torch.zeros(b, h, device="cuda", dtype=torch.float64)
    expected = naive_layer("lstm", x.double(), zeros, zeros, w_ih.double(), w_hh.double())
    with torch.no_grad():
        for _ in range(3):
            out, h_n, c_n = recurrent_layer("lstm", x, None, None, w_ih, w_hh)
            assert relative_error(out, expected[0]) <= tolerance("lstm", "fp32")
    assert len(calls) == 1


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("cell", CELLS)
def test_the_c_launch_is_taken_and_right(cell, dtype, monkeypatch):
    """Under Triton 3.6 a cached launch calls the compiled kernel's C launcher itself
    (ops/launch.py): from their second call the forward and backward kernels go that way, and the
    outputs and every gradient still match float64."""
    import triton

    from rnnbench.ops import gradients, launch, recurrence

    if not triton.__version__.startswith(launch.C_LAUNCHER_VERSIONS):
        pytest.skip(f"Triton {triton.__version__} launches through its runner")
    taken = []
    real = launch._c_launcher

    def counting(kernel):
        found = real(kernel)
        return None if found is None else ((lambda *a: taken.append(kernel.name) or found[0](*a)), found[1])

    monkeypatch.setattr(launch, "_c_launcher", counting)
    for module in (recurrence, gradients):  # cached entries from other tests hold the real launcher
        for launcher in vars(module).values():
            if isinstance(launcher, launch.KernelLauncher):
                monkeypatch.setattr(launcher, "_compiled", {})
    tensors = _layer(cell, 20, 9, 5, 100)
    for _ in range(2):
        check_layer(cell, dtype, tensors)
    assert any("forward" in name for name in taken) and any("backward" in name for name in taken), taken


@pytest.mark.parametrize("hidden_size", [100, 500], ids=["resident", "streamed"])
@pytest.mark.parametrize("mode", STRICT_FP32_MODES)
@pytest.mark.parametrize("cell", CELLS)
def test_strict_fp32_modes_meet_fp32s_tolerance(cell, mode, hidden_size):
    """Both strict-fp32 products on the default plans (3xTF32: the forward's weights resident at
    hidden 100, streamed at 500) against float64 at fp32's tolerance."""
    with strict_fp32(mode):
        check_layer(cell, "fp32", _layer(cell, 20, 9, 5, hidden_size))


def test_fp32s_tolerance_rejects_plain_tf32_products():
    """The gate above can fail: the same check with plain TF32 products in the recurrence (what
    strict fp32 must not silently become) misses fp32's tolerance."""
    from rnnbench.ops import recurrence

    token = recurrence._STRICT_FP32.set("tf32")
    try:
        with pytest.raises(AssertionError, match="relative error"):
            check_layer("lstm", "fp32", _layer("lstm", 20, 30, 100, 500))
    finally:
        recurrence._STRICT_FP32.reset(token)


# (rows = T*B, gates, input, hidden, one gate-gradient tensor): glample's LSTM at hidden 100 and
# 500, theano's GRU at 128 (two tensors) at batch 32 and 128, an odd RNN. All but the last split
# their weight gradients' reductions (5 to 22 slices a tile at hidden 100-128). (Hidden 500 and
# batch 128 are past FUSED_MAX_FLOP: the kernel is checked there all the same.)
GRADIENT_SHAPES = [(600, 4, 100, 100, True), (600, 4, 100, 500, True), (960, 3, 128, 128, False),
                   (3840, 3, 128, 128, False), (37, 1, 5, 37, True)]
# Worst relative error of the weight-gradient kernel: fp32-accurate products (3xTF32, IEEE), TF32's,
# and the half types' (exact products, the stored result rounded).
GRADIENT_TOLERANCE = {"tf32x3": 1e-5, "ieee": 1e-5, "tf32": 3e-3, "bf16": 8e-3, "fp16": 1e-3}


@pytest.mark.parametrize("dtype, precision", [("fp32", "tf32x3"), ("fp32", "ieee"), ("fp32", "tf32"),
                                              ("bf16", "ieee"), ("fp16", "ieee")])
@pytest.mark.parametrize("shape", GRADIENT_SHAPES, ids=lambda s: "N{}-G{}-I{}-H{}".format(*s[:4]))
def test_layer_gradients_kernel_on_many_programs(shape, dtype, precision, monkeypatch):
    """``ops/gradients.layer_gradients_kernel`` (every tile of three products and the bias sums
    in one launch) against the five reductions in float64; the split products leave their
    counters at zero."""
    from rnnbench.ops import gradients
    from rnnbench.ops.gradients import fused, layer_gradients, reference_gradients

    monkeypatch.setattr(gradients, "FUSED_MAX_FLOP", float("inf"))
    rows, gates, input_size, hidden, same = shape
    assert fused(rows, gates * hidden, input_size, hidden)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(0)
    draw = lambda *size: torch.randn(size, generator=gen, device="cuda").to(torch_dtype)  # noqa: E731
    d_gx = draw(rows, gates * hidden)
    tensors = [d_gx, d_gx if same else draw(rows, gates * hidden), draw(rows, input_size), draw(rows, hidden),
               draw(gates * hidden, input_size)]
    got = layer_gradients(*tensors, (True,) * 5, precision, False)
    wide = [t.double() for t in tensors]
    ref = reference_gradients(wide[0], wide[0] if same else wide[1], *wide[2:], (True,) * 5)
    for field in ("dx", "dw_ih", "dw_hh", "db_ih", "db_hh"):
        err = relative_error(getattr(got, field), getattr(ref, field))
        assert err <= GRADIENT_TOLERANCE[dtype if dtype != "fp32" else precision], f"{field}: {err:.3g}"
    assert all(not buf.any() for buf in COUNTERS.values())
