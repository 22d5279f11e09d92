"""rnnbench.ops.projection: the input projection ``x W_ih^T`` as our own launch (interpreted on CPU
tensors) against float64, on odd sizes and a strided input; and the size rule that sends larger
layers to F.linear."""

from __future__ import annotations

import pytest
import torch

from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

pytestmark = pytest.mark.usefixtures("interpreter")

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("seq, batch, inputs, width", [(1, 1, 3, 37), (7, 3, 5, 148), (3, 37, 100, 111),
                                                       (2, 65, 70, 65)])
def test_projection_matches_float64(seq, batch, inputs, width, dtype):
    """Every tile, partial ones at each edge (rows, columns, the reduction), against float64 on the
    operands as the kernel sees them."""
    from rnnbench.ops import projection
    from rnnbench.ops.plans import upcast_dot

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(seq, batch, inputs, generator=gen).to(DTYPES[dtype])
    w = (torch.randn(width, inputs, generator=gen) * inputs ** -0.5).to(DTYPES[dtype])
    assert 2 * seq * batch * width * inputs <= projection.PROJECTION_MAX_FLOP  # our launch, not F.linear
    got = projection.input_projection(x, w, "ieee", upcast_dot(DTYPES[dtype]))
    assert got.shape == (seq, batch, width) and got.dtype == DTYPES[dtype] and got.is_contiguous()
    assert relative_error(got, x.double() @ w.double().t()) <= tolerance("lstm", dtype)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("path", ["even", "masked"])
def test_whole_tiles_take_the_unmasked_path_and_match_float64(dtype, path):
    """Sizes that are whole tiles (rows 64, width 128, input 48 in 32x64x16 tiles) run the tile's
    unmasked path (``even``), and the masked one when the tiles refuse it; both against float64."""
    from rnnbench.ops import projection
    from rnnbench.ops.plans import upcast_dot
    from rnnbench.ops.products import Tiles, even

    tiles = Tiles(32, 64, 16, even=path == "even")
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 16, 48, generator=gen).to(DTYPES[dtype])
    w = (torch.randn(128, 48, generator=gen) * 48 ** -0.5).to(DTYPES[dtype])
    assert even(tiles, 64, 128, 48, 48) is (path == "even")
    got = projection.our_projection(x, w, "ieee", upcast_dot(DTYPES[dtype]), tiles)
    assert relative_error(got, x.double() @ w.double().t()) <= tolerance("lstm", dtype)


def test_a_strided_input_is_read_as_its_values():
    """A batch_first input transposed to [T, B, I] (what rnnbench.nn passes) is not contiguous."""
    from rnnbench.ops import projection

    x = torch.randn(3, 5, 7).transpose(0, 1)  # [5, 3, 7] with strides of [3, 5, 7]
    w = torch.randn(12, 7)
    assert not x.is_contiguous()
    got = projection.input_projection(x, w, "ieee", False)
    assert relative_error(got, x.double() @ w.double().t()) <= tolerance("lstm", "fp32")


def test_larger_layers_take_f_linear(monkeypatch):
    """Past PROJECTION_MAX_FLOP the product is F.linear's (cuBLAS on a GPU), not our launch."""
    from rnnbench.ops import projection

    calls = []
    monkeypatch.setattr(projection, "_PROJECTION", lambda *a: calls.append(a))
    x, w = torch.randn(2, 3, 4), torch.randn(5, 4)
    monkeypatch.setattr(projection, "PROJECTION_MAX_FLOP", 2 * 6 * 5 * 4)
    projection.input_projection(x, w, "ieee", False)
    assert len(calls) == 1
    monkeypatch.setattr(projection, "PROJECTION_MAX_FLOP", 2 * 6 * 5 * 4 - 1)
    got = projection.input_projection(x, w, "ieee", False)
    assert len(calls) == 1 and torch.allclose(got, x @ w.t())


@pytest.mark.parametrize("precision, shape, ours, past_limit", [
    ("tf32x3", (30, 32, 128, 512), True, True),   # whole 64x64x32 tiles: ours past PROJECTION_MAX_FLOP,
    ("tf32", (30, 32, 128, 512), True, False),    # and strict fp32's past EVEN_MAX_FLOP too
    ("ieee", (30, 32, 128, 512), True, False),    # the half types' too, eagerly (not in graphs: a CUDA test)
    ("tf32x3", (30, 20, 100, 400), False, False),  # partial tiles
])
def test_whole_tiles_take_our_launch_up_to_a_larger_size(monkeypatch, precision, shape, ours, past_limit):
    """Where the unmasked path runs, ours up to EVEN_MAX_FLOP in its 64x64 tiles, and in strict
    fp32 (3xTF32) up to STRICT_EVEN_MAX_FLOP (any size); elsewhere the general rule
    (PROJECTION_MAX_FLOP, here 0)."""
    from rnnbench.ops import projection

    calls = []
    monkeypatch.setattr(projection, "_PROJECTION", lambda grid, args, constexprs: calls.append(constexprs.values))
    monkeypatch.setattr(projection, "PROJECTION_MAX_FLOP", 0)
    seq, batch, inputs, width = shape
    flop = 2 * seq * batch * inputs * width

    def ours_now() -> bool:
        before = len(calls)
        projection.input_projection(torch.zeros(seq, batch, inputs), torch.zeros(width, inputs), precision, False)
        return len(calls) > before

    assert ours_now() is ours
    if ours:
        assert calls[0]["EVEN"] and (calls[0]["BM"], calls[0]["BN"]) == (64, 64)
    monkeypatch.setattr(projection, "EVEN_MAX_FLOP", flop - 1)
    assert ours_now() is past_limit  # past EVEN_MAX_FLOP: F.linear, but for strict fp32
    monkeypatch.setattr(projection, "STRICT_EVEN_MAX_FLOP", flop - 1)
    assert not ours_now()  # past both: F.linear


@pytest.mark.parametrize("seq, batch", [(1, 16), (31, 16), (32, 16), (1024, 16), (1000, 3), (300, 600), (257, 37)])
def test_the_chunks_projected_ahead_cover_every_step_once(seq, batch):
    """``ahead_chunks``: consecutive, from step 0 to seq_len, the first of 512 rows' worth of steps
    (at least one), each next ending at four times the end before it (the last at seq_len)."""
    from rnnbench.ops.projection import AHEAD_FIRST_ROWS, ahead_chunks

    chunks = ahead_chunks(seq, batch)
    assert chunks[0] == (0, min(seq, max(1, AHEAD_FIRST_ROWS // batch)))
    assert chunks[-1][1] == seq
    for (_, end), (start, nxt) in zip(chunks, chunks[1:]):
        assert start == end and nxt == min(seq, 4 * end)


def test_projecting_ahead_only_inside_a_graph_capture_and_for_the_gluon_kernel(monkeypatch):
    """``project_ahead`` refuses to run eagerly (lazy loading hung it there; results/h200/input-ahead),
    and a forward given ``ready`` (its input still being written) refuses any kernel but the Gluon
    ones (the LSTM's and GRU's), which wait for it: every cell's ``tl`` kernel here."""
    from rnnbench.ops.projection import project_ahead
    from rnnbench.ops.recurrence import NUM_GATES, layer_launch, recurrence_forward

    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    with pytest.raises(RuntimeError, match="capture only"):
        project_ahead(torch.zeros(3, 2, 5), torch.zeros(20, 5))
    ready = torch.zeros(1, dtype=torch.int32)
    for cell, gates in NUM_GATES.items():  # on the CPU: the tl kernels
        launch = layer_launch(cell, 2, 5, torch.float32, torch.device("cpu"))
        with pytest.raises(ValueError, match="the Gluon kernels'"):
            recurrence_forward(cell, torch.zeros(3, 2, gates * 5), torch.zeros(gates * 5, 5), None, None, None, None,
                               launch, False, ready=ready)


@pytest.mark.parametrize("rows, gate_width, pays", [(3, 100, True), (300, 100, False), (3, 300, False)],
                         ids=["both_fit", "x_too_large", "w_ih_too_large"])
def test_the_projection_splits_only_operands_that_fit(rows, gate_width, pays, monkeypatch):
    """``splits_pay`` past its FLOP limit asks both operands, ``x [rows, I]`` and ``W_ih [G*H,
    I]``, to fit the split (``split_products.fits``, here under a limit of 16,385 elements a part,
    either way round: 3, 37 and 100 pad to at most 128, 300 to 384)."""
    from rnnbench.ops import projection

    monkeypatch.setattr(projection, "SPLIT_MIN_FLOP", {"captured": 0, "eager": 0})
    monkeypatch.setattr(projection.split_products, "MAX_PART_ELEMENTS", 128 * 128 + 1)
    assert projection.splits_pay(rows, gate_width, 37, captured=False) is pays


def test_strict_fp32_takes_the_split_products_from_their_limit(monkeypatch):
    """``input_projection`` in strict fp32 takes ``split_projection`` from SPLIT_MIN_FLOP's eager
    limit (its result against float64 at the split products' accuracy), our tiles below it and for
    operands the split cannot take; in a graph's capture the lower limit (``splits_pay``)."""
    from rnnbench.ops import projection

    x, w = torch.randn(7, 3, 37), torch.randn(100, 37) * 37 ** -0.5
    flop = 2 * 7 * 3 * 100 * 37
    taken = []
    real = projection.split_projection
    monkeypatch.setattr(projection, "split_projection", lambda *a: (taken.append("split"), real(*a))[1])
    monkeypatch.setattr(projection, "SPLIT_MIN_FLOP", {"captured": flop - 1, "eager": flop})
    got = projection.input_projection(x, w, "tf32x3", False)
    assert taken == ["split"] and got.shape == (7, 3, 100)
    assert relative_error(got, x.double() @ w.double().t()) <= 1e-6
    monkeypatch.setattr(projection, "SPLIT_MIN_FLOP", {"captured": flop, "eager": flop + 1})
    projection.input_projection(x, w, "tf32x3", False)
    assert taken == ["split"]  # below the eager limit: our tiles
    assert projection.splits_pay(21, 100, 37, captured=True) and not projection.splits_pay(21, 100, 37, captured=False)
    projection.input_projection(x, w, "tf32", False)
    assert taken == ["split"]  # TF32 never
    monkeypatch.setattr(projection, "SPLIT_MIN_FLOP", {"captured": flop - 1, "eager": flop})
    monkeypatch.setattr(projection.split_products, "MAX_PART_ELEMENTS", 128 * 64)
    projection.input_projection(x, w, "tf32x3", False)
    assert taken == ["split"]  # operands the split cannot take: our tiles
