"""A layer's input projection ``x_proj = x W_ih^T`` (``[T*B, I] x [I, G*H]``), the matmul the
recurrence kernels read their input terms from.

Where the layer is small, an eager forward is bound by host time, and torch's call into cuBLAS
(``F.linear``) is a large piece of it: 10-24 µs of host time on the H100's host
(results/h100/triton-lane-15). :func:`input_projection` runs it as one launch of our own tile
product (``ops/products.py``) through the cached launcher instead, up to
:data:`PROJECTION_MAX_FLOP`, when not capturing a CUDA graph; cuBLAS' kernel is faster on the
device, so past that size, and in a graph, where no host time recurs, F.linear. The products run in the layer's precision (3xTF32 for strict fp32, TF32 where
torch allows it, fp32 accumulation for the half types) and are stored in the weights' dtype, as
``F.linear`` returns them.
"""

from __future__ import annotations

import functools

import torch
from torch.nn import functional as F
import triton
import triton.language as tl

from .launch import Constexprs, KernelLauncher
from .products import Tiles, _product_tile, even

# FLOPs of the product (2 T*B G*H I) up to which our launch replaces F.linear eagerly. On the H100
# our tiles take longer on the device than cuBLAS at every shape probed (600x100x100 fp32: 7.0 µs
# against 4.1; 960x512x128 bf16: 4.5 against 3.3; 960x2048x512 fp32: 92 against 55,
# results/h100/projection/tiles), but eager forwards were faster with ours from 1.2e7 to 1.5e9
# FLOPs (0.86-0.96x the time, the host time saved) and not at 2e9 (1.02x,
# results/h100/projection/4ba7825).
PROJECTION_MAX_FLOP = 1e9
# Tiles: 32x64 with two chunks in flight was the fastest probed for strict fp32 at these shapes
# (7.0-8.1 µs; 64x64 with three, the weight gradients' tile, 17.4-17.9).
TILES = Tiles(32, 64, 32, num_warps=4, num_stages=2)


@triton.jit(do_not_specialize=["ROWS", "I", "GH"])
def input_projection_kernel(x_ptr, w_ih_ptr, out_ptr, ROWS, I, GH, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EVEN: tl.constexpr = False):
    """One program per ``[BM, BN]`` tile of ``out [ROWS, GH] = x [ROWS, I] @ W_ih^T`` (``W_ih``
    ``[GH, I]`` row-major, read as the transposed right operand); every tensor contiguous.
    ``EVEN``: :func:`~rnnbench.ops.products.even` holds for ``ROWS, GH, I`` and the stride ``I``."""
    _product_tile(x_ptr, I, w_ih_ptr, I, out_ptr, ROWS, GH, I, tl.program_id(0), 1, out_ptr, out_ptr, out_ptr,
                  out_ptr, False, False, False, PRECISION, UPCAST, BM, BN, BK, True, False, EVEN)


_PROJECTION = KernelLauncher(input_projection_kernel)


def input_projection(x: torch.Tensor, w_ih: torch.Tensor, precision: str, upcast: bool,
                     tiles: Tiles = TILES) -> torch.Tensor:
    """``x W_ih^T`` as ``[T, B, G*H]``, contiguous.

    Args:
        x: ``[T, B, I]`` (any strides). w_ih: ``[G*H, I]``, contiguous, in ``x``'s dtype and on its device.
        precision: the tl.dot input precision (``ieee``, ``tf32``, ``tf32x3``; :func:`rnnbench.ops.plans.dot_precision`).
        upcast: widen the operands first (the interpreter's bf16, :func:`rnnbench.ops.plans.upcast_dot`).
        tiles: our launch's tiling (the default, :data:`TILES`, except in comparisons).
    """
    T, B, I = x.shape
    GH = w_ih.shape[0]
    # In a CUDA graph being captured the host time does not recur, and cuBLAS' kernel is the faster one.
    if 2 * T * B * GH * I > PROJECTION_MAX_FLOP or (x.is_cuda and torch.cuda.is_current_stream_capturing()):
        return F.linear(x, w_ih).contiguous()  # (a no-op call unless a strided input came out strided)
    return our_projection(x, w_ih, precision, upcast, tiles)


def our_projection(x: torch.Tensor, w_ih: torch.Tensor, precision: str, upcast: bool,
                   tiles: Tiles = TILES) -> torch.Tensor:
    """:func:`input_projection` by our launch whatever the size and whether a graph is being
    captured (for comparisons; same arguments and result)."""
    T, B, I = x.shape
    GH = w_ih.shape[0]
    rows = T * B
    out = torch.empty(T, B, GH, device=x.device, dtype=w_ih.dtype)
    grid = (triton.cdiv(rows, tiles.bm) * triton.cdiv(GH, tiles.bn),)
    _PROJECTION(grid, (x.contiguous(), w_ih, out, rows, I, GH),
                _constexprs(precision, upcast, tiles, even(tiles, rows, GH, I, I)))
    return out


@functools.lru_cache(maxsize=64)
def _constexprs(precision: str, upcast: bool, tiles: Tiles, is_even: bool) -> Constexprs:
    """The projection kernel's compile-time arguments (built once per combination)."""
    return Constexprs(dict(PRECISION=precision, UPCAST=upcast, BM=tiles.bm, BN=tiles.bn, BK=tiles.bk, EVEN=is_even,
                           num_warps=tiles.num_warps, num_stages=tiles.num_stages))
