"""Large strict fp32 products as three fp16 products from operands split once (3xFP16): a layer's
input and weight gradients past our fused launch's limits (``ops/gradients.py``) and its large
input projections (``ops/projection.py``).

In strict fp32 those were cuBLAS' IEEE products on the FMA units (at batch 128, hidden 1024 about
2 ms of a 4.4 ms training step on the H100), then three TF32 products from operands split once
(0.59-0.67x cuBLAS' time, ``results/h100/split-products``). TF32 parts are fp32 in memory; fp16
parts are half the bytes, and fp16 tensor-core products run at twice TF32's rate. On the H100 the
same products from fp16 parts took 0.52-0.61x the 3xTF32 ones' time, at errors against float64 of
1.4-1.9e-7 against 1.5-2.4e-7 (``results/h100/x3-anatomy/products-df51af5``).

fp16 has 5 exponent bits, so each operand is split under a power of two per row (:func:`split`):
the row of the operand as the product reads it (``[R, K]``, the reduction contiguous) is divided
by the power of two that brings its largest ``|x|`` into ``[2^14, 2^15)`` (``common._pow2_above``),
then rounded to fp16 (``hi``) and its remainder rounded to fp16 at the same scale (``lo``;
``common._split_half`` without the remainder's 2^11, so that the three products share one scale).
``hi + lo`` is the row to about 2^-22 of each element, or to 2^-39 of the row's largest where an
element is more than 2^17 below it (``lo`` then below fp16's normal range): far inside fp32's own
bound for a sum over the row. The split takes two launches: each tile's largest ``|x|`` per line
(:func:`line_max_kernel`), then the split (:func:`split_kernel`), each program reducing its lines'
partial maxima first. The product (:func:`split_product_kernel`) makes three fp16 products a
chunk, ``a_lo b_hi + a_hi b_lo + a_hi b_hi``, summed in the tensor core for that chunk only and
added to the running sum by the FMA units (accumulated in the tensor core across the whole
reduction the sum's error grew with the reduction's length: 3xTF32's 1.2e-6 at 512, 9.6e-6 at
4096, ``split-products/speed-d21fcb2``, the tensor core's fp32 accumulation not being IEEE's), and
multiplies each row and column of the result by their powers of two after the last chunk (exact).
The weight gradients' operands (``d_gx^T x``: both reduced over the rows) are split transposed,
their scales per column of the stored tensor. The parts cost memory: each operand's size again
(``d_gx`` split twice, as it is and transposed), held while the products run.

:func:`reference_product` is the product in float64, for the tests.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .common import HALF_SHIFT, _pow2_above, _split_half
from .launch import Constexprs, KernelLauncher
from .plans import cdiv
from .products import Tiles, _tile_offsets

# The split's tile ([rows, columns] of the operand as stored), and the span of a line each of
# line_max_kernel's programs reduces (in tiles), so that the split's programs read few partials.
SPLIT_TILE = (64, 64)
MAX_SPAN_TILES = 8
# The product's tiles, and how many rows of tiles go down before the next column (B's tiles stay
# in L2 meanwhile). The parts are padded with zeros to whole tiles (lines to BM = BN, the
# reduction to BK), so the product's loads take no masks: masked, Triton 3.6 spilled 24-344 bytes
# a thread (sm_90). (On the H100, 128x128 tiles 64 deep with three chunks in flight took
# 0.84-0.88x the time of 32 deep with four: products-df51af5.)
TILES = Tiles(128, 128, 64, num_warps=8, num_stages=3)
GROUP_M = 8


class Parts(NamedTuple):
    """An fp32 operand ``X [R, K]`` split for :func:`product`: ``X[r] ~= (hi[r, :K] + lo[r, :K]) *
    scale[r]`` for ``r < lines`` (``lines`` = R); the rest of each tensor is zeros, to whole
    tiles."""

    hi: torch.Tensor  # [R padded to TILES.bm, K padded to TILES.bk] fp16
    lo: torch.Tensor  # the same
    scale: torch.Tensor  # [R padded] fp32, powers of two
    lines: int  # R
    width: int  # K


@triton.jit(do_not_specialize=["ROWS", "COLS"])
def line_max_kernel(x_ptr, part_ptr, ROWS, COLS, TRANSPOSE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr,
                    SPAN: tl.constexpr):
    """The largest ``|x|`` of each line of ``x [ROWS, COLS]`` (row-major, contiguous) over a span
    of ``SPAN`` tiles along it: the lines are ``x``'s rows, or (``TRANSPOSE``) its columns. Program
    ``(i, j)`` takes lines ``i*BR ..`` (``i*BC ..``) and the span ``j``, and stores at ``part_ptr +
    j * LINES + line`` (``LINES`` = ``ROWS`` or ``COLS``)."""
    LINE: tl.constexpr = BC if TRANSPOSE else BR
    ALONG: tl.constexpr = BR if TRANSPOSE else BC
    lines = tl.program_id(0) * LINE + tl.arange(0, LINE)
    m = tl.zeros([LINE], dtype=tl.float32)
    for t in range(SPAN):
        along = (tl.program_id(1) * SPAN + t) * ALONG + tl.arange(0, ALONG)
        r, c = (along[:, None], lines[None, :]) if TRANSPOSE else (lines[:, None], along[None, :])
        x = tl.load(x_ptr + r * COLS + c, mask=(r < ROWS) & (c < COLS), other=0.0)
        m = tl.maximum(m, tl.max(tl.abs(x), axis=0 if TRANSPOSE else 1))
    tl.store(part_ptr + tl.program_id(1) * (COLS if TRANSPOSE else ROWS) + lines, m,
             mask=lines < (COLS if TRANSPOSE else ROWS))


@triton.jit
def _line_scales(part_ptr, lines, LINES, PARTS):
    """``(scale, inv)`` of ``lines``: the power of two above the largest of their ``PARTS``
    partial maxima (:func:`line_max_kernel`), as ``common._pow2_above`` with ``HALF_SHIFT``."""
    m = tl.zeros(lines.shape, dtype=tl.float32)
    for j in range(PARTS):
        m = tl.maximum(m, tl.load(part_ptr + j * LINES + lines, mask=lines < LINES, other=0.0))
    return _pow2_above(m, HALF_SHIFT)


@triton.jit(do_not_specialize=["ROWS", "COLS", "PARTS", "OUT_LD"])
def split_kernel(x_ptr, part_ptr, hi_ptr, lo_ptr, scale_ptr, ROWS, COLS, PARTS, OUT_LD, TRANSPOSE: tl.constexpr,
                 BR: tl.constexpr, BC: tl.constexpr):
    """``hi``, ``lo`` of a ``[BR, BC]`` tile of ``x [ROWS, COLS]`` (row-major, contiguous; zeros
    past its edges, for the parts' padding) under its lines' powers of two (:func:`_line_scales`),
    stored as ``x`` is, or (``TRANSPOSE``) as its transpose, the lines then ``x``'s columns, in
    rows of ``OUT_LD`` elements; the programs of the first tile along the lines store their scales
    at ``scale_ptr``."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    x = tl.load(x_ptr + r[:, None] * COLS + c[None, :], mask=(r[:, None] < ROWS) & (c[None, :] < COLS), other=0.0)
    if TRANSPOSE:
        scale, inv = _line_scales(part_ptr, c, COLS, PARTS)
        hi, lo = _split_half(x * inv[None, :], True, False)
        out = c[None, :] * OUT_LD + r[:, None]
        if tl.program_id(0) == 0:
            tl.store(scale_ptr + c, scale)
    else:
        scale, inv = _line_scales(part_ptr, r, ROWS, PARTS)
        hi, lo = _split_half(x * inv[:, None], True, False)
        out = r[:, None] * OUT_LD + c[None, :]
        if tl.program_id(1) == 0:
            tl.store(scale_ptr + r, scale)
    tl.store(hi_ptr + out, hi)
    tl.store(lo_ptr + out, lo)


@triton.jit(do_not_specialize=["M", "N", "K"])
def split_product_kernel(a_hi_ptr, a_lo_ptr, a_scale_ptr, b_hi_ptr, b_lo_ptr, b_scale_ptr, c_ptr, M, N, K,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                         EVEN: tl.constexpr):
    """One program per ``[BM, BN]`` tile of ``C [M, N] = A @ B^T`` (contiguous), ``A`` and ``B``
    given as their :class:`Parts` (``K`` the parts' padded width). ``EVEN``: ``M`` and ``N`` are
    whole tiles (the store takes no mask)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    m = (first_m + (pid % in_group) % rows) * BM + tl.arange(0, BM)
    n = ((pid % in_group) // rows) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a_offsets = _tile_offsets(m, k, K, False, True)
        b_offsets = _tile_offsets(k, n, K, True, True)  # [BK, BN]: B^T's tile, read from B's rows
        a_h = tl.load(a_hi_ptr + a_offsets)
        a_l = tl.load(a_lo_ptr + a_offsets)
        b_h = tl.load(b_hi_ptr + b_offsets)
        b_l = tl.load(b_lo_ptr + b_offsets)
        # (the chunk's products summed in the tensor core, the chunk added here: see the module docstring)
        chunk = tl.dot(a_l, b_h)
        chunk = tl.dot(a_h, b_l, chunk)
        chunk = tl.dot(a_h, b_h, chunk)
        acc += chunk
    acc = acc * tl.load(a_scale_ptr + m)[:, None] * tl.load(b_scale_ptr + n)[None, :]
    c_offsets = _tile_offsets(m, n, N, False, EVEN)
    if EVEN:
        tl.store(c_ptr + c_offsets, acc)
    else:
        tl.store(c_ptr + c_offsets, acc, mask=(m[:, None] < M) & (n[None, :] < N))


_LINE_MAX = KernelLauncher(line_max_kernel)
_SPLIT = KernelLauncher(split_kernel)
_PRODUCT = KernelLauncher(split_product_kernel)
_MAX_CONSTEXPRS = {t: Constexprs(dict(TRANSPOSE=t, BR=SPLIT_TILE[0], BC=SPLIT_TILE[1], SPAN=MAX_SPAN_TILES,
                                      num_warps=4)) for t in (False, True)}
_SPLIT_CONSTEXPRS = {t: Constexprs(dict(TRANSPOSE=t, BR=SPLIT_TILE[0], BC=SPLIT_TILE[1], num_warps=4))
                     for t in (False, True)}
_PRODUCT_CONSTEXPRS = {e: Constexprs(dict(BM=TILES.bm, BN=TILES.bn, BK=TILES.bk, GROUP_M=GROUP_M, EVEN=e,
                                          num_warps=TILES.num_warps, num_stages=TILES.num_stages))
                       for e in (False, True)}


def split(x: torch.Tensor, transpose: bool = False) -> Parts:
    """The :class:`Parts` of 2-D fp32 ``x`` (the module docstring): rows of ``x``, or
    (``transpose``) of its transpose, each under its own power of two, padded with zeros."""
    x = x.contiguous()
    rows, cols = x.shape
    lines, width = (cols, rows) if transpose else (rows, cols)
    padded = (cdiv(lines, TILES.bm) * TILES.bm, cdiv(width, TILES.bk) * TILES.bk)
    hi = torch.empty(padded, device=x.device, dtype=torch.float16)
    lo = torch.empty(padded, device=x.device, dtype=torch.float16)
    scale = torch.empty(padded[0], device=x.device, dtype=torch.float32)
    if x.numel() == 0:
        return Parts(hi.zero_(), lo.zero_(), scale.fill_(1.0), lines, width)
    # (the lines' side of the grid first, the other side in spans; the split over the padded extent)
    tiles = (cdiv(rows, SPLIT_TILE[0]), cdiv(cols, SPLIT_TILE[1]))
    line_tiles, along = (tiles[1], tiles[0]) if transpose else tiles
    parts = cdiv(along, MAX_SPAN_TILES)
    partial = torch.empty(parts * lines, device=x.device, dtype=torch.float32)
    _LINE_MAX((line_tiles, parts), (x, partial, rows, cols), _MAX_CONSTEXPRS[transpose])
    grid = (padded[1] // SPLIT_TILE[0], padded[0] // SPLIT_TILE[1]) if transpose else (
        padded[0] // SPLIT_TILE[0], padded[1] // SPLIT_TILE[1])
    _SPLIT(grid, (x, partial, hi, lo, scale, rows, cols, parts, padded[1]), _SPLIT_CONSTEXPRS[transpose])
    return Parts(hi, lo, scale, lines, width)


def product(a: Parts, b: Parts) -> torch.Tensor:
    """``A @ B^T`` in fp32 by 3xFP16 (the module docstring), from ``a = split(A)`` (``A [M, K]``)
    and ``b = split(B)`` (``B [N, K]``): ``[M, N]``, contiguous.

    Raises:
        ValueError: the operands' shapes differ in ``K``.
    """
    M, N, K = a.lines, b.lines, a.hi.shape[1]
    if a.width != b.width:
        raise ValueError(f"A [{M}, {a.width}] @ B^T with B [{N}, {b.width}]: the reductions differ")
    out = torch.empty(M, N, device=a.hi.device, dtype=torch.float32)
    if out.numel() == 0:
        return out
    is_even = M % TILES.bm == 0 and N % TILES.bn == 0
    _PRODUCT((cdiv(M, TILES.bm) * cdiv(N, TILES.bn),),
             (a.hi, a.lo, a.scale, b.hi, b.lo, b.scale, out, M, N, K), _PRODUCT_CONSTEXPRS[is_even])
    return out


def reference_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b^T`` in float64 (``a [M, K]``, ``b [N, K]``): what :func:`product` approximates."""
    return a.double() @ b.double().t()
