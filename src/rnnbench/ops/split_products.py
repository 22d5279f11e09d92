"""Large strict fp32 products as three fp16 products from operands split once (3xFP16): a layer's
input and weight gradients past our fused launch's limits (``ops/gradients.py``) and its large
input projections (``ops/projection.py``).

In strict fp32 those were cuBLAS' IEEE products on the FMA units (at batch 128, hidden 1024 about
2 ms of a 4.4 ms training step on the H100), then three TF32 products from operands split once
(0.59-0.67x cuBLAS' time, ``results/h100/split-products``). TF32 parts are fp32 in memory; fp16
parts are half the bytes, and fp16 tensor-core products run at twice TF32's rate. On the H100 the
same products from fp16 parts took 0.52-0.61x the 3xTF32 ones' time, at errors against float64 of
1.4-1.9e-7 against 1.5-2.4e-7 (``results/h100/x3-anatomy/products-df51af5``).

fp16 has 5 exponent bits, so each operand is split under a power of two per row (:func:`split_all`):
the row of the operand as the product reads it (``[R, K]``, the reduction contiguous) is divided
by the power of two that brings its largest ``|x|`` into ``[2^14, 2^15)`` (``common._pow2_above``),
then rounded to fp16 (``hi``) and its remainder rounded to fp16 at the same scale (``lo``;
``common._split_half`` without the remainder's 2^11, so that the three products share one scale).
``hi + lo`` is the row to about 2^-22 of each element, or to 2^-39 of the row's largest where an
element is more than 2^17 below it (``lo`` then below fp16's normal range): far inside fp32's own
bound for a sum over the row. A call splits all the operands it is given (:func:`split_all`, up
to six: a GRU layer's gradients read six) in two launches and two allocations: each tile's largest
``|x|`` per line (:func:`line_max_kernel`), then the split (:func:`split_kernel`), each program
reducing its lines' partial maxima first; the parts of all of them lie in one fp16 buffer, their
scales and the partial maxima in one fp32 buffer (two launches and four allocations an operand, as
the splits were made before, cost a projection's eager call 94-130 µs of host time with its product:
``results/h100/fp16-products/host-a025768``). The products
(:func:`products`, up to three in one launch: :func:`split_product_kernel`) make three fp16
products a chunk, ``a_lo b_hi + a_hi b_lo + a_hi b_hi``, summed in the tensor core for that chunk
only and added to the running sum by the FMA units (accumulated in the tensor core across the whole
reduction the sum's error grew with the reduction's length: 3xTF32's 1.2e-6 at 512, 9.6e-6 at
4096, ``split-products/speed-d21fcb2``, the tensor core's fp32 accumulation not being IEEE's), and
multiply each row and column of the result by their powers of two after the last chunk (exact).
The weight gradients' operands (``d_gx^T x``: both reduced over the rows) are split transposed,
their scales per column of the stored tensor; the pass that finds the largest value of each of
``d_g^T``'s lines sums them too (the biases' gradients, :attr:`Parts.sums`). The parts cost memory:
each operand's size again (``d_gx`` split twice, as it is and transposed), held while the products
run.

:func:`reference_product` is the product in float64, for the tests.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

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
# A call splits up to this many operands (:func:`split_all`; a GRU layer's gradients take six)
# and makes up to this many products (:func:`products`; a layer's three gradients), each in one
# launch: a launch and its tensors' allocations cost the host more than a small split's device time.
MAX_OPERANDS = 6
MAX_PRODUCTS = 3
# An operand's parts start on whole padded tiles of the buffer (BM lines of BK), its scales on BM
# lines: the kernels take those offsets in these units, so that the compiler knows their alignment
# (a runtime offset of unknown divisibility would cost the loads and stores their vector width).
BLOCK = TILES.bm * TILES.bk
# (What the kernels assume of these: every operand's lines padded alike, whether it is a product's
# A or B, and the split's tiles covering the padded parts in either orientation.)
assert TILES.bm == TILES.bn and TILES.bm % SPLIT_TILE[0] == TILES.bm % SPLIT_TILE[1] == 0
assert TILES.bk % SPLIT_TILE[0] == TILES.bk % SPLIT_TILE[1] == 0
# Offsets inside one operand's high parts (or remainders) are 32-bit in the kernels, as are those of
# the operand itself; across a call's operands and between the two parts, 64-bit.
MAX_PART_ELEMENTS = 2 ** 31


class Parts(NamedTuple):
    """An fp32 operand ``X [R, K]`` split for :func:`products`: ``X[r] ~= (hi[r, :K] + lo[r, :K])
    * scale[r]`` for ``r < lines`` (``lines`` = R), ``hi`` and ``lo`` ``[R padded to TILES.bm, K
    padded to TILES.bk]`` (zeros past ``X``) in fp16, ``scale`` ``[R padded]`` in fp32 (powers of
    two). They live in buffers a :func:`split_all` call shares among its operands: ``hi`` at
    ``halves[at * BLOCK:]``, ``lo`` right after it, ``scale`` at ``scales[scale_at * TILES.bm:]``.
    An operand of no width has no parts and its scales are left unwritten (a product over nothing
    is zeros, :func:`products`, without reading them). Split with its sums (:func:`split_all`),
    each line's sum over its width in fp32 lies at ``scales[sum_at:]`` (:attr:`sums`)."""

    halves: torch.Tensor
    scales: torch.Tensor
    at: int
    scale_at: int
    lines: int
    width: int
    sum_at: int = -1

    @property
    def padded(self) -> tuple[int, int]:
        """``(lines, width)`` padded to whole tiles (:func:`_padded`)."""
        return _padded(self.lines, self.width)

    @property
    def hi(self) -> torch.Tensor:
        """The high parts, ``[lines, width]`` padded, fp16: a view of ``halves``."""
        size = self.padded[0] * self.padded[1]
        return self.halves[self.at * BLOCK:self.at * BLOCK + size].view(self.padded)

    @property
    def lo(self) -> torch.Tensor:
        """The remainders at the high parts' scale, shaped as :attr:`hi`: a view of ``halves``."""
        size = self.padded[0] * self.padded[1]
        return self.halves[self.at * BLOCK + size:self.at * BLOCK + 2 * size].view(self.padded)

    @property
    def scale(self) -> torch.Tensor:
        """Each line's power of two, ``[lines padded]``, fp32: a view of ``scales``."""
        return self.scales[self.scale_at * TILES.bm:self.scale_at * TILES.bm + self.padded[0]]

    @property
    def sums(self) -> torch.Tensor | None:
        """Each line's sum over the operand's width (the fp32 values as given, not split), ``[lines]``,
        fp32: a view of ``scales``; None unless split with its sums."""
        return None if self.sum_at < 0 else self.scales[self.sum_at:self.sum_at + self.lines]


@triton.jit
def _spans(along, ALONG: tl.constexpr, SPAN: tl.constexpr):
    """How many spans of ``SPAN`` tiles ``ALONG`` long a line of ``along`` values takes (as
    :func:`_split_plan` counts them)."""
    return tl.cdiv(tl.cdiv(along, ALONG), SPAN)


@triton.jit
def _line_max(x_ptr, part_ptr, q, ROWS, COLS, TRANSPOSE: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr,
              SPAN: tl.constexpr, SUM: tl.constexpr):
    """Program ``q`` of one operand's line maxima: the largest ``|x|`` of each of a block of lines
    of ``x [ROWS, COLS]`` (row-major, contiguous; the lines are its rows, or with ``TRANSPOSE`` its
    columns) over a span of ``SPAN`` tiles along them, stored at ``part_ptr + span * LINES + line``
    (``LINES`` = ``ROWS`` or ``COLS``). The blocks of lines go first, then the spans. ``SUM``: the
    lines' sums over the span too, from the same loads, stored ``SPANS * LINES`` further (``SPANS``
    the spans of a line: a bias gradient's partial sums, :func:`_split` adds them up)."""
    LINE: tl.constexpr = BC if TRANSPOSE else BR
    ALONG: tl.constexpr = BR if TRANSPOSE else BC
    LINES = COLS if TRANSPOSE else ROWS
    blocks = tl.cdiv(LINES, LINE)
    lines = (q % blocks) * LINE + tl.arange(0, LINE)
    span = q // blocks
    m = tl.zeros([LINE], dtype=tl.float32)
    total = tl.zeros([LINE], dtype=tl.float32)
    for t in range(SPAN):
        along = (span * SPAN + t) * ALONG + tl.arange(0, ALONG)
        r, c = (along[:, None], lines[None, :]) if TRANSPOSE else (lines[:, None], along[None, :])
        x = tl.load(x_ptr + r * COLS + c, mask=(r < ROWS) & (c < COLS), other=0.0)
        m = tl.maximum(m, tl.max(tl.abs(x), axis=0 if TRANSPOSE else 1))
        if SUM:
            total += tl.sum(x, axis=0 if TRANSPOSE else 1)
    tl.store(part_ptr + span * LINES + lines, m, mask=lines < LINES)
    if SUM:
        spans = _spans(ROWS if TRANSPOSE else COLS, ALONG, SPAN)
        tl.store(part_ptr + (spans + span) * LINES + lines, total, mask=lines < LINES)


@triton.jit(do_not_specialize=["R0", "C0", "Q0", "P0", "R1", "C1", "Q1", "P1", "R2", "C2", "Q2", "P2", "R3", "C3",
                               "Q3", "P3", "R4", "C4", "Q4", "P4", "R5", "C5", "Q5", "P5"])
def line_max_kernel(x0_ptr, x1_ptr, x2_ptr, x3_ptr, x4_ptr, x5_ptr, part_ptr,
                    R0, C0, Q0, P0, R1, C1, Q1, P1, R2, C2, Q2, P2, R3, C3, Q3, P3, R4, C4, Q4, P4, R5, C5, Q5, P5,
                    OPERANDS: tl.constexpr, T0: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr,
                    T4: tl.constexpr, T5: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr, SPAN: tl.constexpr,
                    U0: tl.constexpr, U1: tl.constexpr, U2: tl.constexpr, U3: tl.constexpr, U4: tl.constexpr,
                    U5: tl.constexpr):
    """:func:`_line_max` of up to six operands in one launch: operand ``k`` (``x{k}_ptr``, ``[R{k},
    C{k}]``, lines transposed where ``T{k}``, their sums too where ``U{k}``) takes programs
    ``Q{k-1} .. Q{k}`` (``Q{-1}`` = 0) and stores its partials from ``part_ptr + P{k}``;
    ``OPERANDS`` of them are given."""
    pid = tl.program_id(0)
    if pid < Q0:
        _line_max(x0_ptr, part_ptr + P0, pid, R0, C0, T0, BR, BC, SPAN, U0)
    if OPERANDS > 1:
        if (pid >= Q0) & (pid < Q1):
            _line_max(x1_ptr, part_ptr + P1, pid - Q0, R1, C1, T1, BR, BC, SPAN, U1)
    if OPERANDS > 2:
        if (pid >= Q1) & (pid < Q2):
            _line_max(x2_ptr, part_ptr + P2, pid - Q1, R2, C2, T2, BR, BC, SPAN, U2)
    if OPERANDS > 3:
        if (pid >= Q2) & (pid < Q3):
            _line_max(x3_ptr, part_ptr + P3, pid - Q2, R3, C3, T3, BR, BC, SPAN, U3)
    if OPERANDS > 4:
        if (pid >= Q3) & (pid < Q4):
            _line_max(x4_ptr, part_ptr + P4, pid - Q3, R4, C4, T4, BR, BC, SPAN, U4)
    if OPERANDS > 5:
        if (pid >= Q4) & (pid < Q5):
            _line_max(x5_ptr, part_ptr + P5, pid - Q4, R5, C5, T5, BR, BC, SPAN, U5)


@triton.jit
def _line_scales(part_ptr, lines, LINES, PARTS):
    """``(scale, inv)`` of ``lines``: the power of two above the largest of their ``PARTS``
    partial maxima (:func:`_line_max`), as ``common._pow2_above`` with ``HALF_SHIFT``."""
    m = tl.zeros(lines.shape, dtype=tl.float32)
    for j in range(PARTS):
        m = tl.maximum(m, tl.load(part_ptr + j * LINES + lines, mask=lines < LINES, other=0.0))
    return _pow2_above(m, HALF_SHIFT)


@triton.jit
def _line_sums(part_ptr, lines, LINES, PARTS):
    """The sums of ``lines`` from their ``PARTS`` partial sums (:func:`_line_max` with ``SUM``,
    ``PARTS * LINES`` past the partial maxima), added in span order."""
    total = tl.zeros(lines.shape, dtype=tl.float32)
    for j in range(PARTS):
        total += tl.load(part_ptr + (PARTS + j) * LINES + lines, mask=lines < LINES, other=0.0)
    return total


@triton.jit
def _split(x_ptr, part_ptr, halves_ptr, at, scales_ptr, scale_at, q, ROWS, COLS, TRANSPOSE: tl.constexpr,
           BR: tl.constexpr, BC: tl.constexpr, SPAN: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr,
           SUM: tl.constexpr):
    """Program ``q`` of one operand's split: ``hi`` and ``lo`` of a ``[BR, BC]`` tile of ``x [ROWS,
    COLS]`` (row-major, contiguous; zeros past its edges, for the parts' padding) under its lines'
    powers of two (:func:`_line_scales` of the partials at ``part_ptr``), stored from ``halves_ptr +
    at * BM * BK`` as ``x`` is, or (``TRANSPOSE``) as its transpose, in rows padded to ``BK`` (``lo``
    after the ``hi`` of all lines padded to ``BM``); the programs of the first tile along the lines
    store their scales from ``scales_ptr + scale_at * BM``, and with ``SUM`` the lines' sums
    (:func:`_line_sums`) ``2 * SPANS * LINES`` past the partials. The tiles go down ``x``'s padded
    rows first. (Offsets into the shared buffers in 64 bits: a call's parts may pass 2^31 elements.)"""
    hi_ptr = halves_ptr + at.to(tl.int64) * (BM * BK)
    scale_ptr = scales_ptr + scale_at * BM
    LINES = COLS if TRANSPOSE else ROWS
    WIDTH = ROWS if TRANSPOSE else COLS
    lines_padded = tl.cdiv(LINES, BM) * BM
    ld = tl.cdiv(WIDTH, BK) * BK  # (a multiple of BK: the compiler sees each row's alignment)
    parts = _spans(WIDTH, BR if TRANSPOSE else BC, SPAN)
    tiles_down = (ld if TRANSPOSE else lines_padded) // BR
    r = (q % tiles_down) * BR + tl.arange(0, BR)
    c = (q // tiles_down) * BC + tl.arange(0, BC)
    x = tl.load(x_ptr + r[:, None] * COLS + c[None, :], mask=(r[:, None] < ROWS) & (c[None, :] < COLS), other=0.0)
    if TRANSPOSE:
        scale, inv = _line_scales(part_ptr, c, COLS, parts)
        hi, lo = _split_half(x * inv[None, :], True, False)
        out = c[None, :] * ld + r[:, None]
        if q % tiles_down == 0:
            tl.store(scale_ptr + c, scale)
            if SUM:
                tl.store(part_ptr + 2 * parts * COLS + c, _line_sums(part_ptr, c, COLS, parts), mask=c < COLS)
    else:
        scale, inv = _line_scales(part_ptr, r, ROWS, parts)
        hi, lo = _split_half(x * inv[:, None], True, False)
        out = r[:, None] * ld + c[None, :]
        if q // tiles_down == 0:
            tl.store(scale_ptr + r, scale)
            if SUM:
                tl.store(part_ptr + 2 * parts * ROWS + r, _line_sums(part_ptr, r, ROWS, parts), mask=r < ROWS)
    tl.store(hi_ptr + out, hi)
    tl.store(hi_ptr + lines_padded.to(tl.int64) * ld + out, lo)


@triton.jit(do_not_specialize=["R0", "C0", "Q0", "P0", "A0", "S0", "R1", "C1", "Q1", "P1", "A1", "S1", "R2", "C2",
                               "Q2", "P2", "A2", "S2", "R3", "C3", "Q3", "P3", "A3", "S3", "R4", "C4", "Q4", "P4",
                               "A4", "S4", "R5", "C5", "Q5", "P5", "A5", "S5"])
def split_kernel(x0_ptr, x1_ptr, x2_ptr, x3_ptr, x4_ptr, x5_ptr, part_ptr, halves_ptr, scales_ptr,
                 R0, C0, Q0, P0, A0, S0, R1, C1, Q1, P1, A1, S1, R2, C2, Q2, P2, A2, S2,
                 R3, C3, Q3, P3, A3, S3, R4, C4, Q4, P4, A4, S4, R5, C5, Q5, P5, A5, S5,
                 OPERANDS: tl.constexpr, T0: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr,
                 T4: tl.constexpr, T5: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr, SPAN: tl.constexpr,
                 BM: tl.constexpr, BK: tl.constexpr, U0: tl.constexpr, U1: tl.constexpr, U2: tl.constexpr,
                 U3: tl.constexpr, U4: tl.constexpr, U5: tl.constexpr):
    """:func:`_split` of up to six operands in one launch, as :func:`line_max_kernel` shares its
    programs out: operand ``k`` reads its partials from ``part_ptr + P{k}`` and stores its parts
    from ``halves_ptr + A{k} * BM * BK`` and its scales from ``scales_ptr + S{k} * BM`` (offsets
    in whole padded tiles, so that the compiler knows their alignment), its lines' sums where
    ``U{k}``."""
    pid = tl.program_id(0)
    if pid < Q0:
        _split(x0_ptr, part_ptr + P0, halves_ptr, A0, scales_ptr, S0, pid, R0, C0, T0, BR, BC, SPAN, BM, BK, U0)
    if OPERANDS > 1:
        if (pid >= Q0) & (pid < Q1):
            _split(x1_ptr, part_ptr + P1, halves_ptr, A1, scales_ptr, S1, pid - Q0, R1, C1, T1, BR, BC, SPAN,
                   BM, BK, U1)
    if OPERANDS > 2:
        if (pid >= Q1) & (pid < Q2):
            _split(x2_ptr, part_ptr + P2, halves_ptr, A2, scales_ptr, S2, pid - Q1, R2, C2, T2, BR, BC, SPAN,
                   BM, BK, U2)
    if OPERANDS > 3:
        if (pid >= Q2) & (pid < Q3):
            _split(x3_ptr, part_ptr + P3, halves_ptr, A3, scales_ptr, S3, pid - Q2, R3, C3, T3, BR, BC, SPAN,
                   BM, BK, U3)
    if OPERANDS > 4:
        if (pid >= Q3) & (pid < Q4):
            _split(x4_ptr, part_ptr + P4, halves_ptr, A4, scales_ptr, S4, pid - Q3, R4, C4, T4, BR, BC, SPAN,
                   BM, BK, U4)
    if OPERANDS > 5:
        if (pid >= Q4) & (pid < Q5):
            _split(x5_ptr, part_ptr + P5, halves_ptr, A5, scales_ptr, S5, pid - Q4, R5, C5, T5, BR, BC, SPAN,
                   BM, BK, U5)


@triton.jit
def _split_product(a_halves_ptr, a_at, a_scales_ptr, a_scale_at, b_halves_ptr, b_at, b_scales_ptr, b_scale_at, c_ptr,
                   q, M, N, K_TILES, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                   EVEN: tl.constexpr):
    """Program ``q`` of ``C [M, N] = A @ B^T`` (contiguous), a ``[BM, BN]`` tile, from ``A``'s and
    ``B``'s parts (:class:`Parts`: ``hi`` from ``a_halves_ptr + a_at * BM * BK``, ``lo`` after it,
    scales from ``a_scales_ptr + a_scale_at * BM``; ``B``'s likewise; ``K_TILES * BK`` the parts'
    padded width). ``EVEN``: ``M`` and ``N`` are whole tiles (the store takes no mask)."""
    a_ptr = a_halves_ptr + a_at.to(tl.int64) * (BM * BK)
    b_ptr = b_halves_ptr + b_at.to(tl.int64) * (BN * BK)
    a_scale_ptr = a_scales_ptr + a_scale_at * BM
    b_scale_ptr = b_scales_ptr + b_scale_at * BN
    K = K_TILES * BK
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    in_group = GROUP_M * tiles_n
    first_m = (q // in_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    m = (first_m + (q % in_group) % rows) * BM + tl.arange(0, BM)
    n = ((q % in_group) // rows) * BN + tl.arange(0, BN)
    a_lo_ptr = a_ptr + tiles_m.to(tl.int64) * BM * K
    b_lo_ptr = b_ptr + tiles_n.to(tl.int64) * BN * K
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a_offsets = _tile_offsets(m, k, K, False, True)
        b_offsets = _tile_offsets(k, n, K, True, True)  # [BK, BN]: B^T's tile, read from B's rows
        a_h = tl.load(a_ptr + a_offsets)
        a_l = tl.load(a_lo_ptr + a_offsets)
        b_h = tl.load(b_ptr + b_offsets)
        b_l = tl.load(b_lo_ptr + b_offsets)
        # (the chunk's products summed in the tensor core for that chunk, added here: the module docstring)
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


@triton.jit(do_not_specialize=["M0", "N0", "K0", "A0", "AS0", "B0", "BS0", "Q0", "M1", "N1", "K1", "A1", "AS1", "B1",
                               "BS1", "Q1", "M2", "N2", "K2", "A2", "AS2", "B2", "BS2", "Q2"])
def split_product_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c0_ptr, c1_ptr, c2_ptr,
                         M0, N0, K0, A0, AS0, B0, BS0, Q0, M1, N1, K1, A1, AS1, B1, BS1, Q1,
                         M2, N2, K2, A2, AS2, B2, BS2, Q2,
                         PRODUCTS: tl.constexpr, E0: tl.constexpr, E1: tl.constexpr, E2: tl.constexpr,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """:func:`_split_product` of up to three products in one launch: product ``k`` (``C{k} [M{k},
    N{k}]``, ``E{k}`` its ``EVEN``) takes programs ``Q{k-1} .. Q{k}`` (``Q{-1}`` = 0), its ``A``'s
    parts from ``a_ptr + A{k} * BM * BK`` and scales from ``a_scale_ptr + AS{k} * BM``, its ``B``'s
    likewise, reducing over ``K{k} * BK``; ``PRODUCTS`` of them are given."""
    pid = tl.program_id(0)
    if pid < Q0:
        _split_product(a_ptr, A0, a_scale_ptr, AS0, b_ptr, B0, b_scale_ptr, BS0, c0_ptr, pid, M0, N0, K0, BM, BN, BK,
                       GROUP_M, E0)
    if PRODUCTS > 1:
        if (pid >= Q0) & (pid < Q1):
            _split_product(a_ptr, A1, a_scale_ptr, AS1, b_ptr, B1, b_scale_ptr, BS1, c1_ptr, pid - Q0, M1, N1, K1, BM,
                           BN, BK, GROUP_M, E1)
    if PRODUCTS > 2:
        if (pid >= Q1) & (pid < Q2):
            _split_product(a_ptr, A2, a_scale_ptr, AS2, b_ptr, B2, b_scale_ptr, BS2, c2_ptr, pid - Q1, M2, N2, K2, BM,
                           BN, BK, GROUP_M, E2)


_LINE_MAX = KernelLauncher(line_max_kernel)
_SPLIT = KernelLauncher(split_kernel)
_PRODUCT = KernelLauncher(split_product_kernel)


class _SplitPlan(NamedTuple):
    """What :func:`split_all` launches for operands of given shapes (made once per shapes)."""

    halves: int  # elements of the fp16 buffer
    scales: int  # elements of the fp32 buffer: the scales, then the partial maxima
    max_programs: int
    max_ints: tuple  # line_max_kernel's integer arguments
    max_constexprs: Constexprs
    split_programs: int
    split_ints: tuple
    split_constexprs: Constexprs
    parts: tuple  # (at, scale_at, lines, width) of each operand


def _padded(lines: int, width: int) -> tuple[int, int]:
    """An operand's parts' shape: its ``lines`` padded to the product's tile (``TILES.bm``, which
    is ``TILES.bn``), its ``width`` to the tile's depth (``TILES.bk``)."""
    return cdiv(lines, TILES.bm) * TILES.bm, cdiv(width, TILES.bk) * TILES.bk


def fits(rows: int, cols: int) -> bool:
    """Whether an operand ``[rows, cols]`` can be split, as stored or transposed: its padded high
    parts stay under :data:`MAX_PART_ELEMENTS` either way (callers take another path past it)."""
    return max(a * b for a, b in (_padded(rows, cols), _padded(cols, rows))) < MAX_PART_ELEMENTS


@functools.lru_cache(maxsize=256)
def _split_plan(key: tuple) -> _SplitPlan:
    """The :class:`_SplitPlan` of ``key``, ``((rows, cols, transpose, sums), ...)``: each
    operand's lines in blocks of a split tile, their spans of :data:`MAX_SPAN_TILES` tiles, its
    padded parts and scales laid after the operand's before it; in the fp32 buffer the scales of
    all, then each operand's partial maxima (``spans * lines``) and, with ``sums``, its partial
    sums (as many) and sums (``lines``).

    Raises:
        ValueError: an operand does not :func:`fit <fits>`.
    """
    (tile_r, tile_c), bm = SPLIT_TILE, TILES.bm
    at = scale_at = partials = max_end = split_end = 0
    ends, offsets, parts, sums_at = [], [], [], []
    for rows, cols, transpose, sums in key:
        lines, width = (cols, rows) if transpose else (rows, cols)
        padded = _padded(lines, width)
        if not fits(rows, cols):
            raise ValueError(f"[{rows}, {cols}] is too large to split: each of its parts would reach 2^31 elements")
        spans = cdiv(cdiv(width, tile_r if transpose else tile_c), MAX_SPAN_TILES)
        max_end += cdiv(lines, tile_c if transpose else tile_r) * spans
        split_end += padded[0] * padded[1] // (tile_r * tile_c)
        ends.append((max_end, split_end))
        offsets.append(partials)
        parts.append((at, scale_at, lines, width))
        sums_at.append(partials + 2 * spans * lines if sums else -1)
        partials += (2 * spans + 1) * lines if sums else spans * lines
        at += 2 * padded[0] * padded[1] // BLOCK
        scale_at += padded[0] // bm
    max_ints, split_ints = [], []
    for (rows, cols, _, _), (max_q, split_q), part, (a, s, _, _) in zip(key, ends, offsets, parts):
        max_ints += [rows, cols, max_q, scale_at * bm + part]
        split_ints += [rows, cols, split_q, scale_at * bm + part, a, s]
    for _ in range(MAX_OPERANDS - len(key)):  # (the unused operands' programs: none, past the last end)
        max_ints += [0, 0, max_end, 0]
        split_ints += [0, 0, split_end, 0, 0, 0]
    max_constexprs, split_constexprs = split_constexprs_for(tuple([t for _, _, t, _ in key]),
                                                            tuple([u for _, _, _, u in key]))
    parts = [(*part, -1 if at_ < 0 else scale_at * bm + at_) for part, at_ in zip(parts, sums_at)]
    return _SplitPlan(at * BLOCK, scale_at * bm + partials, max_end, tuple(max_ints), max_constexprs, split_end,
                      tuple(split_ints), split_constexprs, tuple(parts))


@functools.lru_cache(maxsize=64)
def split_constexprs_for(transposes: tuple[bool, ...],
                         sums: tuple[bool, ...] = ()) -> tuple[Constexprs, Constexprs]:
    """:func:`line_max_kernel`'s and :func:`split_kernel`'s compile-time arguments for operands
    split as stored or transposed (``transposes``, one an operand), with their lines' sums where
    ``sums`` says (none where it is shorter), made once each."""
    flags = {f"T{k}": k < len(transposes) and transposes[k] for k in range(MAX_OPERANDS)}
    flags.update({f"U{k}": k < len(sums) and sums[k] for k in range(MAX_OPERANDS)})
    common = dict(OPERANDS=len(transposes), **flags, BR=SPLIT_TILE[0], BC=SPLIT_TILE[1], SPAN=MAX_SPAN_TILES,
                  num_warps=4)
    return Constexprs(common), Constexprs(dict(common, BM=TILES.bm, BK=TILES.bk))


def split_all(operands: Sequence[tuple]) -> list[Parts]:
    """The :class:`Parts` of each 2-D fp32 operand ``(x, transpose)`` or ``(x, transpose, sums)``
    (the module docstring): the rows of ``x``, or (``transpose``) of its transpose, each under its
    own power of two, padded with zeros, and with ``sums`` each of those rows' sum in fp32
    (:attr:`Parts.sums`: a bias gradient, ``d_g^T`` summed over its batch rows, from the loads
    that find the rows' largest values); all in two launches and two allocations.

    Raises:
        ValueError: no operands, or more than :data:`MAX_OPERANDS`; an operand too large
            (:func:`_split_plan`).
    """
    if not 0 < len(operands) <= MAX_OPERANDS:
        raise ValueError(f"{len(operands)} operands to split: 1 to {MAX_OPERANDS} a call")
    plan = _split_plan(tuple([(o[0].shape[0], o[0].shape[1], o[1], len(o) > 2 and bool(o[2])) for o in operands]))
    xs = [o[0].contiguous() for o in operands]
    device = xs[0].device
    halves = torch.empty(plan.halves, device=device, dtype=torch.float16)
    scales = torch.empty(plan.scales, device=device, dtype=torch.float32)
    xs += xs[:1] * (MAX_OPERANDS - len(xs))  # (the unused operands' pointers, never read)
    if plan.max_programs:
        _LINE_MAX((plan.max_programs,), (*xs, scales, *plan.max_ints), plan.max_constexprs)
    if plan.split_programs:
        _SPLIT((plan.split_programs,), (*xs, scales, halves, scales, *plan.split_ints), plan.split_constexprs)
    parts = [Parts(halves, scales, *part) for part in plan.parts]
    for p in parts:
        if p.sum_at >= 0 and p.width == 0:
            p.sums.zero_()  # (sums over nothing: no program of the split ran for them)
    return parts


def products(pairs: Sequence[tuple[Parts, Parts]]) -> list[torch.Tensor]:
    """``A @ B^T`` in fp32 by 3xFP16 (the module docstring) for each ``(a, b)`` of operands split
    by :func:`split_all` (``A [M, K]``, ``B [N, K]``): ``[M, N]`` each, contiguous, in one launch.
    Every ``a`` comes from one :func:`split_all` call, every ``b`` from one (the same or another).

    Raises:
        ValueError: no pairs or more than :data:`MAX_PRODUCTS`, a pair's reductions differ, or the
            ``a``s (``b``s) come from several calls.
    """
    if not 0 < len(pairs) <= MAX_PRODUCTS:
        raise ValueError(f"{len(pairs)} products: 1 to {MAX_PRODUCTS} a call")
    a0, b0 = pairs[0]
    ints, evens, outs, end = [], [], [], 0
    for a, b in pairs:
        if a.width != b.width:
            raise ValueError(f"A [{a.lines}, {a.width}] @ B^T with B [{b.lines}, {b.width}]: the reductions differ")
        if a.halves is not a0.halves or b.halves is not b0.halves:
            raise ValueError("the products' operands come from several splits")
        out = torch.empty(a.lines, b.lines, device=a.halves.device, dtype=torch.float32)
        if a.width == 0:
            out.zero_()  # (a product over nothing; its parts were never written)
        else:
            end += cdiv(a.lines, TILES.bm) * cdiv(b.lines, TILES.bn)
        outs.append(out)
        ints += [a.lines, b.lines, a.padded[1] // TILES.bk, a.at, a.scale_at, b.at, b.scale_at, end]
        evens.append(a.lines % TILES.bm == 0 and b.lines % TILES.bn == 0)
    if end:
        unused = MAX_PRODUCTS - len(pairs)
        _PRODUCT((end,), (a0.halves, a0.scales, b0.halves, b0.scales, *outs, *outs[:1] * unused,
                          *ints, *[0, 0, 0, 0, 0, 0, 0, end] * unused), product_constexprs_for(tuple(evens)))
    return outs


@functools.lru_cache(maxsize=16)
def product_constexprs_for(evens: tuple[bool, ...]) -> Constexprs:
    """:func:`split_product_kernel`'s compile-time arguments for products whose stores are whole
    or not (``evens``, one a product), made once each."""
    flags = {f"E{k}": k < len(evens) and evens[k] for k in range(MAX_PRODUCTS)}
    return Constexprs(dict(PRODUCTS=len(evens), **flags, BM=TILES.bm, BN=TILES.bn, BK=TILES.bk, GROUP_M=GROUP_M,
                           num_warps=TILES.num_warps, num_stages=TILES.num_stages))


def split(x: torch.Tensor, transpose: bool = False) -> Parts:
    """:func:`split_all` of one operand."""
    return split_all([(x, transpose)])[0]


def product(a: Parts, b: Parts) -> torch.Tensor:
    """:func:`products` of one pair."""
    return products([(a, b)])[0]


def reference_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b^T`` in float64 (``a [M, K]``, ``b [N, K]``): what :func:`products` approximates."""
    return a.double() @ b.double().t()
