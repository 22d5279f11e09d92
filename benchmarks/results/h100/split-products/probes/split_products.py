"""Large strict fp32 matrix products as three TF32 products, from operands split once.

In strict fp32 a layer's large products (the input projection, and after the reverse recurrence
the input and weight gradients) past our tile launches' limits were cuBLAS' IEEE products, on the
FMA units: at most the 51 TFLOP/s the engine measures as the H100's fp32 peak. 3xTF32 on the
tensor cores is as accurate against float64 (``common._split_tf32``: ``a @ b ~ a_hi @ b_hi + a_hi
@ b_lo + a_lo @ b_hi``, about 2^-22 of the product off) and its three TF32 products have 3x
TF32's tensor-core peak between them. Our tile products (``ops/products.py``) take it through
``tl.dot``'s ``tf32x3``, which splits both operands again in every chunk of the reduction, in
registers, and stores the right operand's parts back to shared memory: past 64x64 tiles that
split costs more than the products (``results/h100/products/3bad064``: 960x2048x512 in 128x128
tiles 109 µs, 64x64 33, cuBLAS 53).

Here each operand is split once, by a launch of its own (:func:`split`: ``hi``, the value
rounded to TF32, and ``lo``, the remainder, as two fp32 tensors), and the product's loop
(:func:`split_product_kernel`) is three plain TF32 products of tiles loaded as they are
(``common._mma_split``: the two small ones summed in an accumulator of their own, which halved
the error against float64 in the recurrence, ``results/h100/triton-lane-13``). The split costs one
pass over each operand (a read, two writes) and the loop loads twice the bytes of one product.

:func:`reference_product` is the same as one float64 product, for the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from .common import _mma_split, _split_tf32
from .launch import Constexprs, KernelLauncher
from .plans import cdiv
from .products import Tiles, _tile_offsets, even

# Elements a program of the split takes.
SPLIT_BLOCK = 1024
# Output tiles of the product, and how many rows of tiles share the columns of B while they are in
# L2 (programs go down GROUP_M tile rows before moving one tile column on).
TILES = Tiles(128, 128, 32, num_warps=8, num_stages=3)
GROUP_M = 8


@triton.jit(do_not_specialize=["NUMEL"])
def split_kernel(x_ptr, hi_ptr, lo_ptr, NUMEL, BLOCK: tl.constexpr):
    """``hi``, ``lo`` of ``x`` (:func:`~rnnbench.ops.common._split_tf32`), every tensor contiguous."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < NUMEL
    hi, lo = _split_tf32(tl.load(x_ptr + i, mask=mask, other=0.0))
    tl.store(hi_ptr + i, hi, mask=mask)
    tl.store(lo_ptr + i, lo, mask=mask)


@triton.jit(do_not_specialize=["M", "N", "K", "lda", "ldb"])
def split_product_kernel(a_hi, a_lo, b_hi, b_lo, c_ptr, M, N, K, lda, ldb, A_T: tl.constexpr, B_T: tl.constexpr,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                         EVEN: tl.constexpr):
    """One program per ``[BM, BN]`` tile of ``C [M, N] = A [M, K] @ B [K, N]`` (fp32, contiguous),
    each operand given as its two parts (``hi``, ``lo``, one layout): ``A`` row-major with row
    stride ``lda``, or (``A_T``) stored as its transpose; ``B`` likewise with ``ldb`` (``B_T``).
    ``EVEN``: :func:`~rnnbench.ops.products.even` holds (no masks)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % in_group) % rows
    tile_n = (pid % in_group) // rows
    m = tile_m * BM + tl.arange(0, BM)
    n = tile_n * BN + tl.arange(0, BN)
    big = tl.zeros([BM, BN], dtype=tl.float32)
    small = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a_offsets = _tile_offsets(m, k, lda, A_T, EVEN)
        b_offsets = _tile_offsets(k, n, ldb, B_T, EVEN)
        if EVEN:
            a_h = tl.load(a_hi + a_offsets)
            a_l = tl.load(a_lo + a_offsets)
            b_h = tl.load(b_hi + b_offsets)
            b_l = tl.load(b_lo + b_offsets)
        else:
            a_mask = (m[:, None] < M) & (k[None, :] < K)
            b_mask = (k[:, None] < K) & (n[None, :] < N)
            a_h = tl.load(a_hi + a_offsets, mask=a_mask, other=0.0)
            a_l = tl.load(a_lo + a_offsets, mask=a_mask, other=0.0)
            b_h = tl.load(b_hi + b_offsets, mask=b_mask, other=0.0)
            b_l = tl.load(b_lo + b_offsets, mask=b_mask, other=0.0)
        big, small = _mma_split(a_h, a_l, b_h, b_l, big, small)
    c_offsets = _tile_offsets(m, n, N, False, EVEN)
    if EVEN:
        tl.store(c_ptr + c_offsets, big + small)
    else:
        tl.store(c_ptr + c_offsets, big + small, mask=(m[:, None] < M) & (n[None, :] < N))


_SPLIT = KernelLauncher(split_kernel)
_PRODUCT = KernelLauncher(split_product_kernel)
_SPLIT_CONSTEXPRS = Constexprs(dict(BLOCK=SPLIT_BLOCK, num_warps=4))


@dataclass(frozen=True)
class Split:
    """One operand in two parts for :func:`product`: ``hi`` and ``lo`` (``hi + lo`` is the
    operand exactly), contiguous, as stored; ``transposed``: the operand is the transpose of that
    storage (``hi.t()``)."""

    hi: torch.Tensor
    lo: torch.Tensor
    transposed: bool

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.hi.shape
        return (cols, rows) if self.transposed else (rows, cols)


def split(x: torch.Tensor) -> Split:
    """``x`` (2-D fp32, any strides) in two parts. Taken as it is stored where ``x`` or its
    transpose is contiguous (a ``.t()`` view costs no copy), copied contiguous otherwise.

    Raises:
        ValueError: ``x`` is not a 2-D fp32 tensor.
    """
    if x.dim() != 2 or x.dtype != torch.float32:
        raise ValueError(f"split takes a 2-D fp32 tensor, got {x.dtype} of shape {tuple(x.shape)}")
    transposed = not x.is_contiguous() and x.t().is_contiguous()
    stored = x.t() if transposed else x.contiguous()
    hi, lo = torch.empty_like(stored), torch.empty_like(stored)
    numel = stored.numel()
    if numel:
        _SPLIT((cdiv(numel, SPLIT_BLOCK),), (stored, hi, lo, numel), _SPLIT_CONSTEXPRS)
    return Split(hi, lo, transposed)


def product(a: torch.Tensor | Split, b: torch.Tensor | Split, tiles: Tiles = TILES) -> torch.Tensor:
    """``a @ b`` in fp32 by 3xTF32 (the module docstring): ``a [M, K]``, ``b [K, N]``, each a 2-D
    fp32 tensor (any strides) or its :func:`split`; returns ``[M, N]`` fp32, contiguous.

    Raises:
        ValueError: not 2-D fp32 operands, or their inner sizes differ.
    """
    a, b = (t if isinstance(t, Split) else split(t) for t in (a, b))
    (M, K), (K_b, N) = a.shape, b.shape
    if K != K_b:
        raise ValueError(f"product of [{M}, {K}] and [{K_b}, {N}]: inner sizes differ")
    out = torch.empty(M, N, device=a.hi.device, dtype=torch.float32)
    if out.numel() == 0:
        return out
    if K == 0:
        return out.zero_()
    lda, ldb = a.hi.shape[1], b.hi.shape[1]  # (row strides of the storage: contiguous)
    grid = (cdiv(M, tiles.bm) * cdiv(N, tiles.bn),)
    _PRODUCT(grid, (a.hi, a.lo, b.hi, b.lo, out, M, N, K, lda, ldb),
             _constexprs(a.transposed, b.transposed, tiles, even(tiles, M, N, K, lda, ldb)))
    return out


_CONSTEXPRS: dict[tuple, Constexprs] = {}


def _constexprs(a_t: bool, b_t: bool, tiles: Tiles, is_even: bool) -> Constexprs:
    key = (a_t, b_t, tiles, is_even)
    found = _CONSTEXPRS.get(key)
    if found is None:
        found = _CONSTEXPRS[key] = Constexprs(dict(A_T=a_t, B_T=b_t, BM=tiles.bm, BN=tiles.bn, BK=tiles.bk,
                                                   GROUP_M=GROUP_M, EVEN=is_even, num_warps=tiles.num_warps,
                                                   num_stages=tiles.num_stages))
    return found


def reference_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` in float64 (what :func:`product` approximates to about 2^-22)."""
    return a.double() @ b.double()
