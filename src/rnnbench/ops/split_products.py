"""Large strict fp32 products as three TF32 products, from operands split once: a layer's input and
weight gradients past our fused launch's limits (``ops/gradients.py``).

In strict fp32 those were cuBLAS' IEEE products on the FMA units: at batch 128, hidden 1024 about
2 ms of a 4.4 ms training step on the H100, where our fused launch (``tl.dot``'s ``tf32x3``, which
splits both operands again in every chunk of the reduction) took 0.93-1.24x cuBLAS' time
(``results/h100/split-products/gradients-e50d1db``). Here each operand is split once, by a launch
of its own (:func:`split`: ``hi``, the value rounded to TF32, and ``lo``, the remainder, as two
fp32 tensors, ``common._split_tf32``), laid out with the reduction contiguous, as TF32 tensor-core
products take both operands: the weight gradients' operands (``d_gx^T x``: both reduced over the
rows) are split transposed. The product (:func:`split_product_kernel`) then loads its tiles as they
are and makes three plain TF32 products a chunk, ``a_lo b_hi + a_hi b_lo + a_hi b_hi``, summed in
the tensor core for that chunk only and added to the running sum by the FMA units: accumulated in
the tensor core across the whole reduction the sum's error grew with the reduction's length (1.2e-6
at 512, 9.6e-6 at 4096: ``split-products/speed-d21fcb2``), the tensor core's fp32 accumulation not
being IEEE's. The parts cost memory: twice each operand's size (``d_gx`` split twice, as it is
and transposed), held while the products run.

:func:`reference_product` is the product in float64, for the tests.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from .common import _split_tf32
from .launch import Constexprs, KernelLauncher
from .plans import cdiv
from .products import Tiles, _tile_offsets, even

# The split's tile ([rows, columns] of the operand as stored).
SPLIT_TILE = (64, 64)
# The product's tiles: 128x128 where they are whole, else 64x128 (960 rows: theano's batch 32),
# and how many rows of tiles go down before the next column (B's tiles stay in L2 meanwhile).
TILES = Tiles(128, 128, 32, num_warps=8, num_stages=3)
NARROW_TILES = Tiles(64, 128, 32, num_warps=4, num_stages=3)
GROUP_M = 8


@triton.jit(do_not_specialize=["ROWS", "COLS"])
def split_kernel(x_ptr, hi_ptr, lo_ptr, ROWS, COLS, TRANSPOSE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """``hi``, ``lo`` of ``x [ROWS, COLS]`` (row-major, contiguous; :func:`~rnnbench.ops.common._split_tf32`),
    stored as ``x`` is or (``TRANSPOSE``) as its transpose ``[COLS, ROWS]``."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (r[:, None] < ROWS) & (c[None, :] < COLS)
    hi, lo = _split_tf32(tl.load(x_ptr + r[:, None] * COLS + c[None, :], mask=mask, other=0.0))
    if TRANSPOSE:
        out = c[None, :] * ROWS + r[:, None]
    else:
        out = r[:, None] * COLS + c[None, :]
    tl.store(hi_ptr + out, hi, mask=mask)
    tl.store(lo_ptr + out, lo, mask=mask)


@triton.jit(do_not_specialize=["M", "N", "K"])
def split_product_kernel(a_hi_ptr, a_lo_ptr, b_hi_ptr, b_lo_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                         BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr):
    """One program per ``[BM, BN]`` tile of ``C [M, N] = A [M, K] @ B^T`` with ``B`` given as ``[N,
    K]``: each operand as its two parts (``hi``, ``lo``), every tensor row-major and contiguous.
    ``EVEN``: whole tiles and chunks, rows on 16-element boundaries (no masks)."""
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
        a_offsets = _tile_offsets(m, k, K, False, EVEN)
        b_offsets = _tile_offsets(k, n, K, True, EVEN)  # [BK, BN]: B^T's tile, read from B's rows
        if EVEN:
            a_h = tl.load(a_hi_ptr + a_offsets)
            a_l = tl.load(a_lo_ptr + a_offsets)
            b_h = tl.load(b_hi_ptr + b_offsets)
            b_l = tl.load(b_lo_ptr + b_offsets)
        else:
            a_mask = (m[:, None] < M) & (k[None, :] < K)
            b_mask = (k[:, None] < K) & (n[None, :] < N)
            a_h = tl.load(a_hi_ptr + a_offsets, mask=a_mask, other=0.0)
            a_l = tl.load(a_lo_ptr + a_offsets, mask=a_mask, other=0.0)
            b_h = tl.load(b_hi_ptr + b_offsets, mask=b_mask, other=0.0)
            b_l = tl.load(b_lo_ptr + b_offsets, mask=b_mask, other=0.0)
        # (the chunk's products summed in the tensor core, the chunk added here: see the module docstring)
        chunk = tl.dot(a_l, b_h, input_precision="tf32")
        chunk = tl.dot(a_h, b_l, chunk, input_precision="tf32")
        chunk = tl.dot(a_h, b_h, chunk, input_precision="tf32")
        acc += chunk
    c_offsets = _tile_offsets(m, n, N, False, EVEN)
    if EVEN:
        tl.store(c_ptr + c_offsets, acc)
    else:
        tl.store(c_ptr + c_offsets, acc, mask=(m[:, None] < M) & (n[None, :] < N))


_SPLIT = KernelLauncher(split_kernel)
_PRODUCT = KernelLauncher(split_product_kernel)
_SPLIT_CONSTEXPRS = {t: Constexprs(dict(TRANSPOSE=t, BR=SPLIT_TILE[0], BC=SPLIT_TILE[1], num_warps=4))
                     for t in (False, True)}


def split(x: torch.Tensor, transpose: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(hi, lo)`` of 2-D fp32 ``x`` (``hi + lo == x`` exactly), each contiguous: ``x``'s shape, or
    (``transpose``) its transpose's."""
    x = x.contiguous()
    rows, cols = x.shape
    shape = (cols, rows) if transpose else (rows, cols)
    hi = torch.empty(shape, device=x.device, dtype=torch.float32)
    lo = torch.empty(shape, device=x.device, dtype=torch.float32)
    if x.numel():
        _SPLIT((cdiv(rows, SPLIT_TILE[0]), cdiv(cols, SPLIT_TILE[1])), (x, hi, lo, rows, cols),
               _SPLIT_CONSTEXPRS[transpose])
    return hi, lo


def product(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """``A @ B^T`` in fp32 by 3xTF32 (the module docstring), from ``a = split(A)`` (``A [M, K]``) and
    ``b = split(B)`` (``B [N, K]``): ``[M, N]``, contiguous.

    Raises:
        ValueError: the operands' shapes differ in ``K``.
    """
    (M, K), (N, K_b) = a[0].shape, b[0].shape
    if K != K_b:
        raise ValueError(f"A [{M}, {K}] @ B^T with B [{N}, {K_b}]: the reductions differ")
    out = torch.empty(M, N, device=a[0].device, dtype=torch.float32)
    if out.numel() == 0 or K == 0:
        return out.zero_()
    # (the first tiling whose tiles are whole, else the wide one masked)
    tiles = next((t for t in (TILES, NARROW_TILES) if even(t, M, N, K, K)), TILES)
    _PRODUCT((cdiv(M, tiles.bm) * cdiv(N, tiles.bn),), (*a, *b, out, M, N, K),
             _constexprs(tiles, even(tiles, M, N, K, K)))
    return out


@functools.lru_cache(maxsize=16)
def _constexprs(tiles: Tiles, is_even: bool) -> Constexprs:
    """The product kernel's compile-time arguments (built once per combination)."""
    return Constexprs(dict(BM=tiles.bm, BN=tiles.bn, BK=tiles.bk, GROUP_M=GROUP_M, EVEN=is_even,
                           num_warps=tiles.num_warps, num_stages=tiles.num_stages))


def reference_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b^T`` in float64 (``a [M, K]``, ``b [N, K]``): what :func:`product` approximates."""
    return a.double() @ b.double().t()
