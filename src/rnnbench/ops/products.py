"""One tile of a matrix product, for the launches that run a layer's small products in one
program per tile (``ops/gradients.py``: the weight and input gradients; ``ops/projection.py``: the
input projection): where the products are small, a Triton launch from our cached launcher costs
less host time than a cuBLAS call from torch (results/h100/triton-lane-15)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ..precision import matmul_mode
from .common import _mma


@dataclass(frozen=True)
class Tiles:
    """How a product is tiled: ``bm x bn`` output tiles, the reduction in ``bk``-deep chunks,
    ``num_warps`` per program, ``num_stages`` chunks in flight; ``even``: take the unmasked path
    where :func:`even` allows it (False: always masked, for comparisons)."""

    bm: int
    bn: int
    bk: int
    num_warps: int = 4
    num_stages: int = 2
    even: bool = True


def cublas_at(precision: str, dtype: torch.dtype):
    """A context in which torch's products (cuBLAS) of ``dtype`` operands take the kernels'
    ``precision``: float32 ones never in TF32 where it is strict (not ``"tf32"``), whatever
    ``torch.backends.cuda.matmul.allow_tf32`` says (``rnnbench.precision.matmul_mode("fp32")``: a
    TF32 layer multiplying strictly at a tiny width, ``plans.layer_precision``); otherwise as
    torch's setting has them."""
    return matmul_mode("fp32") if dtype == torch.float32 and precision != "tf32" else contextlib.nullcontext()


def even(tiles: Tiles, m: int, n: int, k: int, *strides: int) -> bool:
    """Whether an ``[m, n]`` product over ``k`` can run :func:`_product_tile`'s ``EVEN`` path:
    every tile and every chunk of the reduction whole (``m``, ``n``, ``k`` multiples of the
    tile's sides), every operand row on a 16-element boundary (each of ``strides``, in elements),
    and ``tiles.even``. Masks on a tile's contiguous dimension keep Triton from loading it in
    16-byte vectors and from pipelining 16-bit operands with ``cp.async`` (an sm_90 compile's
    SASS: scalar ``LDG.E.U16`` loads, against ``LDGSTS.E.BYPASS.128`` without them)."""
    return (tiles.even and m % tiles.bm == 0 and n % tiles.bn == 0 and k % tiles.bk == 0
            and all(s % 16 == 0 for s in strides))


@triton.jit
def _tile_offsets(i, j, ld, TRANSPOSED: tl.constexpr, EVEN: tl.constexpr):
    """Offsets of the ``[len(i), len(j)]`` tile at rows ``i`` and columns ``j`` of a matrix stored
    row-major with row stride ``ld``, or (``TRANSPOSED``) stored as its transpose (element
    ``(r, c)`` at ``c * ld + r``). ``EVEN``: the tile's contiguous runs start on multiples of 16
    elements and are at least 16 long (what :func:`even` checked), told to the compiler, which
    cannot see it through a runtime stride. (The hint must be set here, on the op computing the
    offsets: set inside a helper called with them, on its argument, it is lost.)"""
    if TRANSPOSED:
        offsets = j[None, :] * ld + i[:, None]
        if EVEN:
            offsets = tl.max_contiguous(tl.multiple_of(offsets, [16, 1]), [16, 1])
    else:
        offsets = i[:, None] * ld + j[None, :]
        if EVEN:
            offsets = tl.max_contiguous(tl.multiple_of(offsets, [1, 16]), [1, 16])
    return offsets


@triton.jit
def _product_tile(a_ptr, lda, b_ptr, ldb, c_ptr, M, N, K, task, SLICES, part_ptr, count_ptr, bias_ptr, also_ptr,
                  A_T: tl.constexpr, BIAS: tl.constexpr, ALSO: tl.constexpr, PRECISION: tl.constexpr,
                  UPCAST: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, B_T: tl.constexpr = False,
                  SPLIT: tl.constexpr = True, EVEN: tl.constexpr = False):
    """Slice ``task % SLICES`` of the reduction of tile ``task // SLICES`` (row-major over the
    ``[M, N]`` output's tiles) of ``C = A @ B``: ``A [M, K]`` stored row-major with row stride
    ``lda``, or (``A_T``) as its transpose ``[K, M]``; ``B [K, N]`` row-major with row stride
    ``ldb``, or (``B_T``) as its transpose ``[N, K]``; ``C`` contiguous ``[M, N]``. With ``BIAS``, the tiles of the first column also sum
    ``A`` over ``K`` (the rows of ``A^T``: a bias gradient, from the operand already loaded) into
    ``bias_ptr [M]``, and with ``ALSO`` into ``also_ptr`` too.

    With one slice (always, when not ``SPLIT``: then no partials or counters are touched, and
    their pointers may be any) the tile is stored. With several, each slice stores its fp32 partial (and its
    partial sums) at ``part_ptr + task * (BM * BN + BM)`` and counts itself done on the tile's
    counter (``count_ptr + tile * SLICES``, zero before); the last to arrive adds the partials in
    slice order (the same sum whichever finishes last), stores the tile and sets the counter back
    to zero.

    ``EVEN`` (the caller checked :func:`even` for ``M, N, K`` and both strides): no masks, and the
    loads and the store told that their rows start on 16-element boundaries."""
    tile = task // SLICES
    tiles_n = tl.cdiv(N, BN)
    m = (tile // tiles_n) * BM + tl.arange(0, BM)
    n = (tile % tiles_n) * BN + tl.arange(0, BN)
    k_per = tl.cdiv(tl.cdiv(K, SLICES), BK) * BK
    k_lo = (task % SLICES) * k_per
    k_hi = tl.minimum(K, k_lo + k_per)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    # The bias sums elementwise in the loop, reduced once after it: a reduction inside the loop
    # crashed Triton 3.6's TritonGPUOptimizeThreadLocality pass for fp32 operands (sm_90).
    a_sum = tl.zeros([BM, BK], dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BK):
        k = k0 + tl.arange(0, BK)
        a_offsets = _tile_offsets(m, k, lda, A_T, EVEN)
        b_offsets = _tile_offsets(k, n, ldb, B_T, EVEN)
        if EVEN:
            a = tl.load(a_ptr + a_offsets)
            b = tl.load(b_ptr + b_offsets)
        else:
            a = tl.load(a_ptr + a_offsets, mask=(m[:, None] < M) & (k[None, :] < k_hi), other=0.0)
            b = tl.load(b_ptr + b_offsets, mask=(k[:, None] < k_hi) & (n[None, :] < N), other=0.0)
        if BIAS:
            a_sum += a.to(tl.float32)
        acc = _mma(a, b, acc, PRECISION, UPCAST)
    sums = tl.sum(a_sum, axis=1)
    c_offsets = _tile_offsets(m, n, N, False, EVEN)
    c_mask = (m[:, None] < M) & (n[None, :] < N)
    last = SLICES == 1
    if SPLIT and not last:
        partial = part_ptr + task * (BM * BN + BM)
        local = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
        tl.store(partial + local, acc)
        if BIAS:
            tl.store(partial + BM * BN + tl.arange(0, BM), sums)
        tl.debug_barrier()  # every thread's part of the partials written before the count
        first = tile * SLICES
        if tl.atomic_add(count_ptr + first, 1, sem="acq_rel") == SLICES - 1:
            last = True
            acc = tl.zeros([BM, BN], dtype=tl.float32)
            sums = tl.zeros([BM], dtype=tl.float32)
            for j in range(SLICES):  # written by other programs: read through L2 (.cg), not a stale L1
                slice_ = part_ptr + (first + j) * (BM * BN + BM)
                acc += tl.load(slice_ + local, cache_modifier=".cg")
                if BIAS:
                    sums += tl.load(slice_ + BM * BN + tl.arange(0, BM), cache_modifier=".cg")
            tl.atomic_xchg(count_ptr + first, 0)
    if last:
        if EVEN:
            tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty))
        else:
            tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
        if BIAS:
            if tile % tiles_n == 0:
                tl.store(bias_ptr + m, sums.to(bias_ptr.dtype.element_ty), mask=m < M)
                if ALSO:
                    tl.store(also_ptr + m, sums.to(also_ptr.dtype.element_ty), mask=m < M)
