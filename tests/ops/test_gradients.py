"""rnnbench.ops.gradients: a layer's weight, bias and input gradients in one launch (interpreted,
on CPU tensors) against the same five reductions in float64 torch calls, on odd sizes; each
gradient left out when not asked for; the two bias gradients of an LSTM never one tensor; the
launch taken only for small layers; and every cell's layer through the torch calls as well (the
path large layers take)."""

from __future__ import annotations

import pytest
import torch

from rnnbench.verify import relative_error

from test_recurrence import CELLS, DTYPES, FP32_TOLERANCE, check_layer, make_layer

pytestmark = pytest.mark.usefixtures("interpreter")

FIELDS = ("dx", "dw_ih", "dw_hh", "db_ih", "db_hh")
# (rows = T*B, gates, input, hidden, one gate-gradient tensor for both sides): rows 1, 3, 37 and
# 100 (two tiles of 64); gate widths of one to three tiles; input below and above hidden; the GRU's
# two tensors; rows 300 and 260, whose weight-gradient reductions split into 3 slices a tile.
SHAPES = [(1, 4, 3, 37, True), (3, 3, 100, 37, False), (37, 1, 5, 100, True), (100, 4, 70, 20, True),
          (100, 3, 37, 37, False), (300, 4, 5, 20, True), (260, 3, 37, 37, False)]
# Worst relative error accepted: fp32 products against float64 (a sum of up to 400 terms); half
# types, whose products are exact in fp32, miss by the rounding of the stored result.
TOLERANCE = {"fp32": 1e-6, "bf16": 8e-3, "fp16": 1e-3}


def _inputs(rows, gates, input_size, hidden, same, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    width = gates * hidden

    def draw(*size):
        return torch.randn(size, generator=gen).to(dtype)

    d_gx = draw(rows, width)
    return d_gx, d_gx if same else draw(rows, width), draw(rows, input_size), draw(rows, hidden), draw(width, input_size)


def _widened(tensors):
    d_gx, d_gh, *rest = [t.double() for t in tensors]
    return [d_gx, d_gx if tensors[1] is tensors[0] else d_gh, *rest]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "N{}-G{}-I{}-H{}-{}".format(*s[:4], "same" if s[4] else "two"))
def test_fused_gradients_match_float64(shape, dtype):
    from rnnbench.ops.plans import upcast_dot
    from rnnbench.ops.gradients import fused, layer_gradients, reference_gradients

    tensors = _inputs(*shape, DTYPES[dtype])
    assert fused(shape[0], shape[1] * shape[3], shape[2], shape[3])
    got = layer_gradients(*tensors, (True,) * 5, "ieee", upcast_dot(DTYPES[dtype]))
    ref = reference_gradients(*_widened(tensors), (True,) * 5)
    for field in FIELDS:
        value = getattr(got, field)
        assert value.dtype == DTYPES[dtype] and value.is_contiguous(), field
        err = relative_error(value, getattr(ref, field))
        assert err <= TOLERANCE[dtype], f"{field}: relative error {err:.3g}"


@pytest.mark.parametrize("need", [(False,) * 5, (True, False, False, False, False), (False, True, False, True, False),
                                  (False, False, True, False, True), (False, False, False, False, True),
                                  (True, True, True, False, False)])
@pytest.mark.parametrize("same", [True, False], ids=["same", "two"])
def test_only_the_gradients_asked_for(need, same):
    from rnnbench.ops.gradients import layer_gradients, reference_gradients

    tensors = _inputs(7, 4, 5, 9, same, torch.float32)
    got = layer_gradients(*tensors, need, "ieee", False)
    ref = reference_gradients(*_widened(tensors), need)
    for field, asked in zip(FIELDS, need):
        value = getattr(got, field)
        assert (value is not None) == asked, field
        if asked:
            assert relative_error(value, getattr(ref, field)) <= TOLERANCE["fp32"], field


@pytest.mark.parametrize("same", [True, False], ids=["same", "two"])
def test_split_reductions_in_any_order(same, concurrent_programs, monkeypatch):
    """Every program in a thread of its own, side by side, so the slices of a tile finish in any
    order: whichever arrives last sums them; the counters are left at zero for the next launch."""
    from rnnbench.ops import gradients

    buf = torch.zeros(1024, dtype=torch.int32)
    monkeypatch.setattr(gradients, "MIN_SLICE_K", 32)  # 2 to 4 slices a tile at these sizes
    monkeypatch.setattr(gradients, "counters", lambda count, device: (buf, None))
    assert gradients.slices_for(2, 100) == 4
    for seed in (0, 1):  # the second launch finds the counters as the first left them
        tensors = _inputs(100, 3, 37, 37, same, torch.float32, seed=seed)
        got = gradients.layer_gradients(*tensors, (True,) * 5, "ieee", False)
        ref = gradients.reference_gradients(*_widened(tensors), (True,) * 5)
        for field in FIELDS:
            assert relative_error(getattr(got, field), getattr(ref, field)) <= TOLERANCE["fp32"], field
        assert not buf.any()


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("same", [True, False], ids=["same", "two"])
def test_whole_tiles_take_the_unmasked_path(dtype, same, monkeypatch):
    """Sizes that are whole tiles (rows 128, gate width 128, input and hidden 32 in 32x32x16 tiles)
    run the tiles' unmasked path, each weight gradient's reduction split into 4 slices."""
    from rnnbench.ops import gradients
    from rnnbench.ops.plans import upcast_dot
    from rnnbench.ops.products import Tiles, even

    tiles = Tiles(32, 32, 16)
    monkeypatch.setattr(gradients, "MIN_SLICE_K", 32)
    assert all(even(tiles, *sizes) for sizes in [(128, 32, 128, 128, 32), (128, 32, 128, 32), (128, 32, 128, 128, 32)])
    assert gradients.slices_for(4, 128) == 4
    tensors = _inputs(128, 4, 32, 32, same, DTYPES[dtype])
    got = gradients.layer_gradients(*tensors, (True,) * 5, "ieee", upcast_dot(DTYPES[dtype]), tiles)
    ref = gradients.reference_gradients(*_widened(tensors), (True,) * 5)
    for field in FIELDS:
        err = relative_error(getattr(got, field), getattr(ref, field))
        assert err <= TOLERANCE[dtype], f"{field}: relative error {err:.3g}"


def test_one_gate_gradient_gives_two_bias_gradients_not_one_tensor():
    """The LSTM's and RNN's b_ih and b_hh get the same sum, in two tensors (an optimiser updating
    one gradient in place must not change the other)."""
    from rnnbench.ops.gradients import layer_gradients

    got = layer_gradients(*_inputs(5, 4, 3, 6, True, torch.float32), (False, False, False, True, True), "ieee", False)
    assert torch.equal(got.db_ih, got.db_hh)
    assert got.db_ih.data_ptr() != got.db_hh.data_ptr()


def test_one_launch_for_small_layers_only(monkeypatch):
    """Glample's LSTM (batch 20, seq 30, hidden 100) takes the launch; FlashRNN's (batch 16, seq
    1024, hidden 768) the torch calls, and so does a bias gradient asked for without its weight's
    (the sums come with the weight gradient's tiles)."""
    from rnnbench.ops import gradients

    launches = []
    monkeypatch.setattr(gradients, "_LAYER_GRADIENTS", lambda grid, *args, **kw: launches.append(grid))
    frozen = (True, False, False, True, True)
    for rows, hidden, need, launched in [(20 * 30, 100, (True,) * 5, 1), (16 * 1024, 768, (True,) * 5, 0),
                                         (20 * 30, 100, frozen, 0)]:
        launches.clear()
        tensors = [torch.zeros(n, m) for n, m in [(rows, 4 * hidden), (rows, 4 * hidden), (rows, hidden),
                                                  (rows, hidden), (4 * hidden, hidden)]]
        tensors[1] = tensors[0]
        gradients.layer_gradients(*tensors, need, "ieee", False)
        assert len(launches) == launched, (rows, hidden, need)


@pytest.mark.parametrize("dtype, precision, rows, hidden, launched", [
    (torch.float32, "tf32x3", 960, 128, 1),   # theano's LSTM at batch 32, hidden 128: whole 32x64 tiles
    (torch.float32, "tf32x3", 960, 512, 1),   # at hidden 512, 6.0e9 FLOP: past FUSED_MAX_FLOP, whole tiles
    (torch.bfloat16, "ieee", 960, 512, 1),    # 64x64 tiles for 16-bit operands
    (torch.float32, "tf32", 3840, 128, 1),    # TF32 at 1.5e9
    (torch.float32, "tf32", 960, 512, 0),     # but not at 6.0e9
    (torch.float32, "ieee", 960, 512, 0),     # strict fp32 on FMA units: not measured, the general limit
    (torch.float32, "tf32x3", 600, 500, 0),   # glample's at hidden 500: partial tiles, past FUSED_MAX_FLOP
    (torch.float32, "tf32x3", 1920, 512, 0),  # past EVEN_FUSED_MAX_FLOP
])
def test_whole_tiles_take_one_launch_up_to_a_larger_size(monkeypatch, dtype, precision, rows, hidden, launched):
    from rnnbench.ops import gradients

    launches = []
    monkeypatch.setattr(gradients, "_LAYER_GRADIENTS", lambda grid, args, constexprs, stream: launches.append(
        constexprs.values))
    monkeypatch.setattr(gradients, "counters", lambda count, device: (None, None))
    d_gx = torch.zeros(rows, 4 * hidden, dtype=dtype)
    tensors = [d_gx, d_gx] + [torch.zeros(n, m, dtype=dtype) for n, m in [(rows, hidden), (rows, hidden),
                                                                          (4 * hidden, hidden)]]
    gradients.layer_gradients(*tensors, (True,) * 5, precision, False)
    assert len(launches) == launched
    if launched:
        assert launches[0]["EVEN"] and launches[0]["BM"] == (64 if dtype == torch.bfloat16 else 32)


@pytest.mark.parametrize("cell", CELLS)
def test_layer_through_the_torch_calls(cell, monkeypatch):
    """The layer's backward on the path large layers take (every gradient against float64)."""
    from rnnbench.ops import gradients

    monkeypatch.setattr(gradients, "FUSED_MAX_FLOP", 0)
    check_layer(cell, make_layer(cell, (3, 7, 5, 37)), "fp32", FP32_TOLERANCE)


@pytest.mark.parametrize("need", [(True,) * 5, (True, False, False, False, False), (False, True, False, True, False),
                                  (False, False, False, True, True),
                                  (False, False, True, False, True)])
@pytest.mark.parametrize("shape", [SHAPES[1], SHAPES[3], SHAPES[4]], ids=["N3-G3", "N100-G4", "N100-G3"])
def test_split_gradients_match_float64(shape, need):
    """Strict fp32's gradients past the fused launch's limits where the splits pay
    (``split_gradients``: three products from split operands, the biases' sums), each only where
    asked, against float64; the GRU's two gate-gradient tensors too."""
    from rnnbench.ops.gradients import reference_gradients, split_gradients

    tensors = _inputs(*shape, torch.float32)
    got = split_gradients(*tensors, need)
    ref = reference_gradients(*_widened(tensors), need)
    for field, asked in zip(FIELDS, need):
        value = getattr(got, field)
        assert (value is not None) == asked, field
        if asked:
            assert value.shape == getattr(ref, field).shape and value.is_contiguous(), field
            assert relative_error(value, getattr(ref, field)) <= TOLERANCE["fp32"], field


@pytest.mark.parametrize("shape", [SHAPES[3], SHAPES[4]], ids=["one-gate-tensor", "two"])
def test_split_gradients_sum_the_biases_in_the_split(shape, monkeypatch):
    """Where a weight gradient splits ``d_g^T``, the biases' sums come from that split (torch's
    sums are asked for neither bias), match float64, and are two tensors of their own even where
    both are one sum (the LSTM's: one gate-gradient tensor)."""
    from rnnbench.ops import gradients

    asked = []
    real = gradients.reference_gradients
    monkeypatch.setattr(gradients, "reference_gradients", lambda *a: (asked.append(a[-1][3:]), real(*a))[1])
    tensors = _inputs(*shape, torch.float32)
    got = gradients.split_gradients(*tensors, (True,) * 5)
    assert asked == [(False, False)]
    ref = real(*_widened(tensors), (False, False, False, True, True))
    assert relative_error(got.db_ih, ref.db_ih) <= TOLERANCE["fp32"]
    assert relative_error(got.db_hh, ref.db_hh) <= TOLERANCE["fp32"]
    got.db_ih.zero_()
    assert relative_error(got.db_hh, ref.db_hh) <= TOLERANCE["fp32"]  # (not the same memory)


@pytest.mark.parametrize("precision, rows, hidden, path", [
    ("tf32x3", 960, 1024, "splits"),   # theano's LSTM at batch 32, hidden 1024: 2.4e10 FLOP
    ("tf32x3", 3840, 512, "splits"),   # at batch 128, hidden 512: 2.4e10 (64 tiles of each weight gradient)
    ("tf32x3", 600, 500, "torch"),     # glample's at hidden 500: 3.6e9, too few to pay
    ("tf32x3", 960, 512, "fused"),     # within EVEN_FUSED_MAX_FLOP
    ("tf32", 960, 1024, "torch"),      # TF32: cuBLAS' TF32 products
    ("ieee", 960, 1024, "torch"),      # strict fp32 on FMA units
])
def test_strict_fp32_past_the_fused_limits_takes_the_splits_where_they_pay(monkeypatch, precision, rows, hidden,
                                                                          path):
    from rnnbench.ops import gradients

    taken = []
    monkeypatch.setattr(gradients, "_LAYER_GRADIENTS", lambda *a: taken.append("fused"))
    monkeypatch.setattr(gradients, "counters", lambda count, device: (None, None))
    monkeypatch.setattr(gradients, "split_gradients", lambda *a: taken.append("splits"))
    monkeypatch.setattr(gradients, "reference_gradients", lambda *a: taken.append("torch"))
    d_gx = torch.zeros(rows, 4 * hidden)
    tensors = [d_gx, d_gx] + [torch.zeros(n, m) for n, m in [(rows, hidden), (rows, hidden), (4 * hidden, hidden)]]
    gradients.layer_gradients(*tensors, (True,) * 5, precision, False)
    assert taken == [path]


@pytest.mark.parametrize("rows, gates, hidden, pays", [
    (960, 4, 1024, True),     # theano's LSTM at batch 32, hidden 1024: 2.4e10 FLOP
    (3840, 4, 512, True),     # at batch 128, hidden 512: 2.4e10
    (3840, 3, 512, True),     # the GRU's: 1.8e10
    (960, 4, 512, False),     # at batch 32: 6.0e9
    (600, 4, 500, False),     # glample's at hidden 500: 3.6e9
    (2 ** 20, 4, 1024, False),  # d_gx [2^20, 4096]: its parts past 2^31 elements (split_products.fits)
])
def test_the_splits_pay_by_flops(rows, gates, hidden, pays):
    """``splits_pay``: from SPLIT_MIN_FLOP, eagerly as in a graph's capture (however few tiles
    each weight gradient has), for operands the split takes."""
    from rnnbench.ops.gradients import splits_pay

    assert splits_pay(rows, gates * hidden, hidden, hidden) is pays
