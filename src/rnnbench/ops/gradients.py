"""The weight, bias and input gradients of one layer after its reverse recurrence, in one launch.

The backward kernel (``ops/<cell>/kernels.py``) leaves the gradients of the gate pre-activations
of every step, ``d_gx, d_gh [N, G*H]`` with ``N = T*B`` rows (one tensor except for the GRU,
whose candidate gate's recurrent part differs). The rest of a layer's backward is five reductions
over them (``h_prev [N, H]`` is ``h_0 .. h_{T-1}``, ``x [N, I]`` the layer's input)::

    dx    = d_gx W_ih      [N, I]          dW_ih = d_gx^T x       [G*H, I]
    dW_hh = d_gh^T h_prev  [G*H, H]        db_ih = sum_n d_gx     db_hh = sum_n d_gh   [G*H]

:func:`reference_gradients` is those as torch calls: three matmuls, the bias sums and a copy (the
two biases of an LSTM or RNN get the same sum, and two parameters must not share a gradient
tensor). That is five or six launches from Python, each some 10-25 µs of host time on the H100's
host (cuBLAS' strict fp32 matmuls are also two kernels each there, a split-K reduce after the
product) -- what a small layer's eager training step is made of. :func:`layer_gradients` runs all
of them as one Triton launch (:func:`layer_gradients_kernel`: every program takes one tile of one
product, or a slice of a tile's reduction where a product has few tiles; the bias sums come with
the weight gradients' tiles, from the operand they load anyway) where the layer is small
(:data:`FUSED_MAX_FLOP`) or its sizes are whole tiles (:data:`EVEN_FUSED_MAX_FLOP`: the tiles'
unmasked path, faster on the device than cuBLAS at every size measured), and the torch calls
elsewhere -- but for strict fp32's larger layers, whose products come from operands split once
(:func:`split_gradients`, ``ops/split_products.py``) where :func:`splits_pay`. The slices of a
tile meet without waiting for each other: the last to finish sums the
others' partials (so no program depends on another being resident, and the interpreter's
one-at-a-time programs run it too).

Products run in the layer's precision (:func:`rnnbench.ops.plans.dot_precision`: 3xTF32 or IEEE
for strict fp32, TF32 where torch allows it, fp32 accumulation for the half types); results are
stored in the weights' dtype, as torch's matmuls return them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from . import split_products
from .launch import Constexprs, KernelLauncher, counters
from .plans import cdiv
from .products import Tiles, _product_tile, cublas_at, even

# The three products' FLOPs (2 N G*H (2I + H)) up to which one fused launch replaces the torch
# calls. Strict fp32 on the H100 (results/h100/triton-lane-15, both paths checked against float64
# and timed A B B A): at 0.04-0.38 GFLOP (glample's LSTM and RNN at hidden 100, theano's LSTM and
# GRU at batch 32, hidden 128) the eager training step took 0.92-0.96x the time and the graphed
# one 0.98-1.02x; at 0.42-1.7 GFLOP (glample's at hidden 500, theano's at batch 128) the graphed
# step took 1.05-1.36x, the fused products' 3xTF32 tiles slower than cuBLAS' there.
FUSED_MAX_FLOP = 4e8
# The same where the shape takes the tiles' unmasked path (every size a multiple of the tiles'
# sides and of 16), by product precision ("half": bf16 and fp16 operands): our launch took less
# device time than the torch calls at every size measured (results/h100/products/3bad064): strict
# fp32 (3xTF32) up to 6.0e9 (960 rows, hidden 512: 172 µs against 178; 3840 rows, hidden 128: 48
# against 74), bf16 up to 6.0e9 (22 against 35), TF32 up to 1.5e9 (34 against 44); at 6.0e9 in TF32
# the graphed training step took 1.11x the time (results/h100/products/4e2c230). Strict fp32 on FMA
# units (``ieee``) was not measured: the general limit.
EVEN_FUSED_MAX_FLOP = {"tf32x3": 6.1e9, "half": 6.1e9, "tf32": 1.6e9}
# Tiles of the products, by operand width (the same measurements): fp32 products (3xTF32, TF32)
# fastest in 32x64 tiles, two chunks in flight, at every shape (glample's LSTM at hidden 100: 14.8
# µs, 64x64 35.8, the torch calls 33.0); bf16 in 64x64 with three (at hidden 512: 22.3, 32x64 75.1).
FP32_TILES = Tiles(32, 64, 32, num_warps=4, num_stages=2)
HALF_TILES = Tiles(64, 64, 32, num_warps=4, num_stages=3)
# A product with few tiles splits each tile's reduction into slices, up to about this many
# programs and down to MIN_SLICE_K of the reduction a slice: dW's reduction runs over all T*B
# rows: at batch 128 (3840 rows, 12 tiles) one program per tile made the graphed training step
# 2.07x slower on the H100 (results/h100/triton-lane-15).
TARGET_PROGRAMS, MIN_SLICE_K = 264, 128
# Past the fused launch's limits, strict fp32 takes ops/split_products (3xFP16) from this many FLOPs
# of the three products, eagerly as in graphs; the torch calls (cuBLAS' IEEE products) below. On
# the H100, device time with the splits in two launches and the products in one
# (results/h100/split-launches/products-48eac23, the torch calls in the same process): 0.38-0.55x
# the torch calls' time from 1.8e10 (theano's batch 32 at hidden 1024: LSTM 235 µs against 534;
# batch 128 at hidden 512: 237 against 542, GRU 249 against 457; batch 128 at hidden 1024: 738
# against 1,967). Smaller layers past the fused launch were as fast either way or faster split
# (split-launches/crossover-ec6abbb: glample's LSTM at hidden 500, 1.7e9: 75.8 against 74.3 and the
# fused launch's 74.7), but from 4e9 (with the fused launch on whole tiles up to 4e9 too) the
# GRU's eager training step at batch 32, hidden 512 took 1.10x the time (its graphed step 0.98x,
# the LSTM's 0.89x; split-launches/limits-f86a7e2): not taken. Until 48eac23 an eager call also
# needed 128 tiles of 128x128 of each weight gradient (the splits' launches and allocations were
# host time); without that rule the engine's eager training steps took 0.78-0.83x the time at
# theano's batch 128, hidden 512 and fastrnns' (LSTM 1,527 -> 1,273 µs, GRU 1,396 -> 1,094,
# fastrnns' LSTM 2,613 -> 2,125), the other layers within their rounds' spread (limits-f86a7e2).
SPLIT_MIN_FLOP = 1e10


@dataclass
class LayerGradients:
    """What :func:`layer_gradients` returns; a field is None where it was not asked for."""

    dx: torch.Tensor | None
    dw_ih: torch.Tensor | None
    dw_hh: torch.Tensor | None
    db_ih: torch.Tensor | None
    db_hh: torch.Tensor | None


@triton.jit(do_not_specialize=["ROWS", "I", "H", "TASKS_IH", "TASKS_HH", "TASKS_DX", "SLICES_IH", "SLICES_HH",
                                "SLICES_DX"])
def layer_gradients_kernel(
    d_gx_ptr, d_gh_ptr, x_ptr, h_ptr, w_ih_ptr, dx_ptr, dw_ih_ptr, dw_hh_ptr, db_ih_ptr, db_hh_ptr, part_ptr,
    count_ptr,
    ROWS, I, H, TASKS_IH, TASKS_HH, TASKS_DX, SLICES_IH, SLICES_HH, SLICES_DX,
    GATES: tl.constexpr, DB_IH: tl.constexpr, DB_HH_FROM_IH: tl.constexpr, DB_HH: tl.constexpr,
    PRECISION: tl.constexpr, UPCAST: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    EVEN: tl.constexpr = False,
):
    """One program per task, in this order: the tiles of ``dW_ih`` (``TASKS_IH`` = its tiles
    times ``SLICES_IH``, the slices each tile's reduction is split into), of ``dW_hh``, then of
    ``dx``. A count of 0 leaves that gradient out (its pointer is not touched). The bias sums come
    with the weight gradients' first column of tiles: ``db_ih`` (``DB_IH``) with ``dW_ih``'s, from
    ``d_gx``, and ``db_hh`` either there too (``DB_HH_FROM_IH``: the LSTM's and RNN's two biases
    have one gradient) or (``DB_HH``) with ``dW_hh``'s, from ``d_gh``. The products' partials and
    counters are indexed by program (``part_ptr``: fp32, ``BM * BN + BM`` per program;
    ``count_ptr``: zero, as left). ``EVEN``: :func:`~rnnbench.ops.products.even` holds for all
    three products (``ROWS, G*H, I, H`` multiples of the tiles' sides and of 16)."""
    pid = tl.program_id(0)
    GH = GATES * H
    end_ih = TASKS_IH
    end_hh = end_ih + TASKS_HH
    if pid < end_ih:
        _product_tile(d_gx_ptr, GH, x_ptr, I, dw_ih_ptr, GH, I, ROWS, pid, SLICES_IH, part_ptr, count_ptr,
                      db_ih_ptr, db_hh_ptr, True, DB_IH, DB_HH_FROM_IH, PRECISION, UPCAST, BM, BN, BK, False, True,
                      EVEN)
    elif pid < end_hh:
        _product_tile(d_gh_ptr, GH, h_ptr, H, dw_hh_ptr, GH, H, ROWS, pid - end_ih, SLICES_HH,
                      part_ptr + end_ih * (BM * BN + BM), count_ptr + end_ih, db_hh_ptr, db_hh_ptr, True, DB_HH, False,
                      PRECISION, UPCAST, BM, BN, BK, False, True, EVEN)
    elif pid < end_hh + TASKS_DX:
        _product_tile(d_gx_ptr, GH, w_ih_ptr, I, dx_ptr, ROWS, I, GH, pid - end_hh, SLICES_DX,
                      part_ptr + end_hh * (BM * BN + BM), count_ptr + end_hh, dx_ptr, dx_ptr, False, False, False,
                      PRECISION, UPCAST, BM, BN, BK, False, True, EVEN)


_LAYER_GRADIENTS = KernelLauncher(layer_gradients_kernel)


def fused(rows: int, gate_width: int, input_size: int, hidden_size: int, even_limit: float = 0.0) -> bool:
    """Whether :func:`layer_gradients` takes one launch for a layer of these sizes (``rows`` =
    T*B, ``gate_width`` = G*H): its products' FLOPs are at most :data:`FUSED_MAX_FLOP`, or at most
    ``even_limit`` (:data:`EVEN_FUSED_MAX_FLOP` where the tiles are whole, :func:`all_even`)."""
    flop = 2 * rows * gate_width * (2 * input_size + hidden_size)
    return flop <= FUSED_MAX_FLOP or flop <= even_limit


def layer_tiles(dtype: torch.dtype) -> Tiles:
    """The products' tiles for operands of ``dtype``: :data:`HALF_TILES` or :data:`FP32_TILES`."""
    return HALF_TILES if dtype.itemsize == 2 else FP32_TILES


def all_even(tiles: Tiles, rows: int, gate_width: int, input_size: int, hidden_size: int) -> bool:
    """Whether all three products take the tiles' unmasked path (:func:`~rnnbench.ops.products.even`):
    ``dW_ih [G*H, I]`` and ``dW_hh [G*H, H]`` over the rows, ``dx [rows, I]`` over ``G*H``
    (operand strides ``G*H``, ``I``, ``H``)."""
    return (even(tiles, gate_width, input_size, rows, gate_width, input_size)
            and even(tiles, gate_width, hidden_size, rows, hidden_size)
            and even(tiles, rows, input_size, gate_width, gate_width, input_size))


def reference_gradients(d_gx, d_gh, x, h_prev, w_ih, need: tuple[bool, ...]) -> LayerGradients:
    """The five gradients as torch calls (see the module docstring), each where ``need`` (``dx,
    dW_ih, dW_hh, db_ih, db_hh``) asks. ``d_gx``, ``d_gh`` ``[N, G*H]``, ``x [N, I]``, ``h_prev
    [N, H]``, ``w_ih [G*H, I]``, all in one dtype; bias sums accumulate in fp32."""
    dx = d_gx @ w_ih if need[0] else None
    dw_ih = d_gx.t() @ x if need[1] else None
    dw_hh = d_gh.t() @ h_prev if need[2] else None
    db_ih = d_gx.sum(0, dtype=torch.float32).to(x.dtype) if need[3] else None
    db_hh = None
    if need[4]:  # the same sum where both sides' gate gradients are one tensor (not the GRU): a copy
        db_hh = db_ih.clone() if db_ih is not None and d_gh is d_gx else d_gh.sum(0, dtype=torch.float32).to(x.dtype)
    return LayerGradients(dx, dw_ih, dw_hh, db_ih, db_hh)


def layer_gradients(d_gx, d_gh, x, h_prev, w_ih, need: tuple[bool, ...], precision: str,
                    upcast: bool, tiles: Tiles | None = None) -> LayerGradients:
    """:func:`reference_gradients`, in one Triton launch where :func:`fused` says so.

    Args: as :func:`reference_gradients` (each tensor contiguous); ``precision`` the tl.dot input
    precision (``ieee``, ``tf32``, ``tf32x3``), ``upcast`` whether to widen the operands first
    (the interpreter's bf16, :func:`rnnbench.ops.plans.upcast_dot`), ``tiles`` the products' tiling
    (None: :func:`layer_tiles`; others in comparisons).
    """
    rows, gate_width = d_gx.shape
    input_size, hidden_size = x.shape[1], h_prev.shape[1]
    same = d_gh is d_gx
    # The bias sums come with a weight gradient's tiles (the kernel's docstring): a bias asked for
    # without its weight (frozen weights, trained biases) takes the torch calls, as does a call
    # asking for no product (nothing to launch).
    db_hh_from_ih = same and need[3] and need[4]
    biases_fit = (not need[3] or need[1]) and (not need[4] or db_hh_from_ih or need[2])
    tiles = layer_tiles(x.dtype) if tiles is None else tiles
    is_even = all_even(tiles, rows, gate_width, input_size, hidden_size)
    limit = EVEN_FUSED_MAX_FLOP.get("half" if x.dtype.itemsize == 2 else precision, 0.0) if is_even else 0.0
    if not (any(need[:3]) and biases_fit and fused(rows, gate_width, input_size, hidden_size, limit)):
        if precision == "tf32x3" and splits_pay(rows, gate_width, input_size, hidden_size):
            return split_gradients(d_gx, d_gh, x, h_prev, w_ih, need)
        with cublas_at(precision, x.dtype):
            return reference_gradients(d_gx, d_gh, x, h_prev, w_ih, need)
    dev, dtype = x.device, w_ih.dtype
    x, w_ih = x.contiguous(), w_ih.contiguous()  # the kernel takes rows of stride I (x may come as a view)
    dx = torch.empty(rows, input_size, device=dev, dtype=dtype) if need[0] else None
    dw_ih = torch.empty(gate_width, input_size, device=dev, dtype=dtype) if need[1] else None
    dw_hh = torch.empty(gate_width, hidden_size, device=dev, dtype=dtype) if need[2] else None
    db_ih = torch.empty(gate_width, device=dev, dtype=dtype) if need[3] else None
    db_hh = torch.empty(gate_width, device=dev, dtype=dtype) if need[4] else None
    bm, bn = tiles.bm, tiles.bn
    row_tiles = cdiv(gate_width, bm)
    # (tiles, reduction length) of dW_ih, dW_hh, dx; 0 tiles where not asked for
    products = [(row_tiles * cdiv(input_size, bn) if need[1] else 0, rows),
                (row_tiles * cdiv(hidden_size, bn) if need[2] else 0, rows),
                (cdiv(rows, bm) * cdiv(input_size, bn) if need[0] else 0, gate_width)]
    slices = [slices_for(count, k) for count, k in products]
    tasks = [count * n for (count, _), n in zip(products, slices)]
    split = any(n > 1 for n in slices)
    partials = torch.empty(sum(tasks) * (bm * bn + bm) if split else 1, device=dev,
                           dtype=torch.float32)
    count, stream = counters(sum(tasks) if split else 1, dev)
    unused = d_gx  # a pointer for every gradient not asked for (its tasks are 0)
    outputs = [unused if t is None else t for t in (dx, dw_ih, dw_hh, db_ih, db_hh)]
    constexprs = _constexprs(gate_width // hidden_size, need[3], db_hh_from_ih, need[4] and not db_hh_from_ih,
                             precision, upcast, tiles, is_even)
    _LAYER_GRADIENTS((sum(tasks),), (d_gx, d_gh, x, h_prev, w_ih, *outputs, partials, count, rows, input_size,
                                     hidden_size, *tasks, *slices), constexprs, stream)
    return LayerGradients(dx, dw_ih, dw_hh, db_ih, db_hh)


def splits_pay(rows: int, gate_width: int, input_size: int, hidden_size: int) -> bool:
    """Whether strict fp32's gradients past the fused launch's limits take :func:`split_gradients`:
    the three products' FLOPs (``2 rows G*H (2I + H)``) are at least :data:`SPLIT_MIN_FLOP`, and
    every operand fits the split (``split_products.fits``)."""
    return (2 * rows * gate_width * (2 * input_size + hidden_size) >= SPLIT_MIN_FLOP
            and all(split_products.fits(rows, n) for n in (gate_width, input_size, hidden_size))
            and split_products.fits(gate_width, input_size))


def split_gradients(d_gx, d_gh, x, h_prev, w_ih, need: tuple[bool, ...]) -> LayerGradients:
    """:func:`reference_gradients` for fp32 tensors, the three products by 3xFP16 from operands
    split once (``ops/split_products.py``: every operand in one split call, the products in one
    launch): ``dx = d_gx W_ih`` from ``d_gx`` and ``W_ih^T``, ``dW = d_g^T x`` from ``d_g^T`` and
    ``x^T`` (each operand laid out with the reduction contiguous). The biases' sums come with the
    split of ``d_g^T`` (its lines summed by the pass that finds their largest values: one read of
    ``d_g`` fewer than torch's sums), where a weight gradient splits it, else torch's; they are
    views of the split's small fp32 buffer (scales and partials)."""
    same = d_gh is d_gx
    # (operand name: tensor, transposed[, its lines' sums wanted]), each split once however many
    # products read it
    wanted = {}
    if need[0]:
        wanted.update(d_gx=(d_gx, False), w_ih=(w_ih, True))
    if need[1] or (need[2] and same):
        wanted["d_gx_t"] = (d_gx, True, need[3] or (need[4] and same))
    if need[1]:
        wanted["x"] = (x, True)
    if need[2]:
        if not same:
            wanted["d_gh_t"] = (d_gh, True, need[4])
        wanted["h"] = (h_prev, True)
    parts = dict(zip(wanted, split_products.split_all(list(wanted.values())))) if wanted else {}
    pairs = {"dx": ("d_gx", "w_ih"), "dw_ih": ("d_gx_t", "x"), "dw_hh": ("d_gx_t" if same else "d_gh_t", "h")}
    asked = [name for name, wants in zip(pairs, need) if wants]
    made = {}
    if asked:  # (a call for the biases alone makes no product)
        made = dict(zip(asked, split_products.products([(parts[a], parts[b]) for a, b in map(pairs.get, asked)])))
    # The biases' sums where a split made them: d_gx^T's lines are db_ih's, and db_hh's where both
    # sides' gate gradients are one tensor (the LSTM's, the RNN's), else d_gh^T's.
    summed = pairs["dw_hh"][0]
    db_ih = parts["d_gx_t"].sums if need[3] and "d_gx_t" in parts else None
    db_hh = parts[summed].sums if need[4] and summed in parts else None
    if same and db_ih is not None and db_hh is not None:
        db_hh = db_ih.clone()  # (one sum, two gradients: each its own tensor, as torch.nn gives them)
    rest = reference_gradients(d_gx, d_gh, x, h_prev, w_ih,
                               (False, False, False, need[3] and db_ih is None, need[4] and db_hh is None))
    return LayerGradients(made.get("dx"), made.get("dw_ih"), made.get("dw_hh"),
                          rest.db_ih if db_ih is None else db_ih, rest.db_hh if db_hh is None else db_hh)


@functools.lru_cache(maxsize=256)
def _constexprs(gates: int, db_ih: bool, db_hh_from_ih: bool, db_hh: bool, precision: str, upcast: bool,
                tiles: Tiles, is_even: bool) -> Constexprs:
    """The gradients kernel's compile-time arguments (built once per combination)."""
    return Constexprs(dict(GATES=gates, DB_IH=db_ih, DB_HH_FROM_IH=db_hh_from_ih, DB_HH=db_hh, PRECISION=precision,
                           UPCAST=upcast, BM=tiles.bm, BN=tiles.bn, BK=tiles.bk, EVEN=is_even,
                           num_warps=tiles.num_warps, num_stages=tiles.num_stages))


def slices_for(tiles: int, reduction: int) -> int:
    """Slices each of a product's ``tiles`` splits its ``reduction`` into: enough to bring the
    product to about :data:`TARGET_PROGRAMS` programs, none shorter than :data:`MIN_SLICE_K`."""
    if tiles == 0:
        return 1
    return max(1, min(cdiv(reduction, MIN_SLICE_K), TARGET_PROGRAMS // tiles))
