"""Pieces every recurrent kernel shares: tile loads, the recurrent matmul, tanh, the grid-wide
barrier, and the launch plan (how hidden units and batch rows are split across programs).

Layout convention of every kernel: a program owns ``BLOCK_H`` hidden units and ``BLOCK_B`` batch
rows (``pid_h = program_id(0)``, ``pid_b = program_id(1)``), and its tiles are ``[BLOCK_H,
BLOCK_B]``: hidden units down, batch rows across -- the transpose of the ``[B, H]`` tensors in
memory. The recurrent matmul is computed transposed, ``gates^T = W_slice @ h^T``, so that the
program's weights are the left operand with all gates stacked: ``[GP * BLOCK_H, K]`` rows, gate
``g``'s rows at ``g * BLOCK_H ..`` (``GP`` = gates rounded up to a power of 2; the GRU's fourth
block is zeros). On an H100 that left operand is what Hopper's wgmma wants (M = 64 rows for an
LSTM or GRU at ``BLOCK_H = 16``), and when the weights are loaded before the time loop the compiler
keeps them in shared memory for every step (checked in the TTGIR: the ``local_alloc`` is hoisted out
of the loop). One matmul per step yields every gate; :func:`_split_gates` separates them.

The programs of one batch block exchange ``h_t`` (or, backward, the gate gradients) through global
memory and meet at a barrier on their own counter once per step; different batch blocks never wait
for each other.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

# Under TRITON_INTERPRET=1 programs run one after another on the CPU, so programs that wait for
# each other would hang: there, one program owns all hidden units of its batch block.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_INTERPRET = tl.constexpr(INTERPRET)  # visible inside kernels
# Tests may run the interpreter's programs in threads, side by side (tests/ops/conftest.py); only
# then may a batch block have several programs under the interpreter.
INTERPRETER_PROGRAMS_CONCURRENT = False

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Shared memory one program may fill with its resident weights and the staged h tile: the H100's
# per-block limit (227 KB, read off the device when there is one) less room for the compiler's own
# scratch (layout conversions). Measured by compiling: a resident LSTM step at hidden 768, 16
# batch rows, bf16, uses exactly (64 + 16) * 1024 * 2 = 160 KB.
H100_SHARED_MEMORY = 232448
SHARED_MEMORY_MARGIN = 16 * 1024
# Tile sizes. tl.dot needs K >= 16; M and N may be smaller on sm_90 (padded by the compiler).
MIN_BLOCK = 16  # batch rows and reduction chunks
MIN_BLOCK_H = 4
MAX_BLOCK_B = 64
MAX_BLOCK_H = 256
BLOCK_K = 64
# Resident forward weights are held in pieces of BLOCK_K columns, and h is staged one piece at a
# time: a piece of h (BLOCK_B x BLOCK_K) of at most this many bytes kept ptxas from spilling at 4
# warps (sm_90, Triton 3.6: bf16 16 x 256 and 32 x 128, fp32 16 x 128 and 32 x 64 compile clean).
RESIDENT_PIECE_BYTES = 8 * 1024
# Except 16-bit weights at 32 batch rows up to hidden 768: pieces of 256 columns (16 KB of h), one
# wgmma chain waited for per piece, so half the waits a step: 1.07-1.16x the graphed forward at
# hidden 512-768 on the H100 (benchmarks/on_chip.py --compare piece, triton-lane-10). At hidden
# 1024 they spilled 96-168 bytes a thread (sm_90, Triton 3.6) for 1.01-1.02x; 16 KB pieces
# elsewhere measured 0.86-1.05x (512 columns at 16 rows, TF32) or spilled (bf16 at 64 rows).
WIDE_PIECE_ROWS, WIDE_PIECE_MAX_HIDDEN = 32, 768
# A 16-bit forward at this many batch rows a program streams its weights from L2 (the chunk loop,
# which Triton pipelines) instead of holding them resident: there the pieces are 64 columns wide,
# each waited for in turn (16 waits a step at hidden 1024). Streamed: 1.31-1.41x the graphed
# forward at batch 128, hidden 1024 on the H100; at 16-32 rows 0.81-0.99x (benchmarks/on_chip.py
# --compare stream, triton-lane-10). TF32 at 64 rows was not measured and stays resident.
STREAM_FORWARD_ROWS = 64
# A forward with fp32 weights (TF32 or 3xTF32 products) at 64 batch rows a program (batch 128 from
# hidden 768, batch 256 from 512) and a 64-row weight tile (LSTM and GRU at 16 units a program) runs
# one warpgroup, 4 warps: with 8 the two warpgroups split the batch columns and each reads, and for
# 3xTF32 splits, every weight chunk. On the H100 (results/h100/triton-lane-12), the kernel alone
# (benchmarks/plan_sweep.py --cases warps64, per step): strict fp32 1.19-1.31x at batch 64-256,
# hidden 512-2048, TF32 1.02-1.24x; the lanes (on_chip.py --compare warps64, both plans verified
# against float64): graphed forward 1.12-1.18x (strict fp32) and 1.04-1.19x (TF32), graphed
# training 1.04-1.11x and 1.01-1.05x. 16-bit streamed weights at 4 warps: 0.89-0.97x at hidden
# 1024 (1.11x at 512, not checked further), so they keep 8. The 3xTF32 forward spills at 64 rows
# either way (192 bytes a thread at 8 warps, 248 at 4: sm_90, Triton 3.6).
FP32_WIDE_FORWARD_WARPS = 4
# Widest resident forward stack for 3xTF32 (strict fp32 on tensor cores): the split of a resident
# operand lands in registers (two fp32 copies of it), which held 64 x 128 without spills and
# spilled 2.4 KB per thread at 64 x 512 (sm_90, Triton 3.6, ops/aot.py).
X3_RESIDENT_K = 128
# On-chip plans (Plan.h_on_chip) by default up to this many rows of stacked weights (gates_padded x
# k_padded): one program per batch block runs every unit, so its step's matmul is as tall as the
# tile. Measured on the H100 against the exchange plan, kernel time (benchmarks/on_chip.py): the
# RNN at hidden 100 (128 rows) 1.23-1.36x faster forward, 1.27-1.50x training; 512 rows (LSTM and
# GRU at hidden 100-128, bf16) 0.69-0.94x forward, 0.83-1.02x training; the RNN at hidden 256
# (256 rows) 0.80-1.00x forward, 0.91-1.14x training. With fast activations the 512-row LSTM and GRU
# tiles still lost: 0.78-0.95x forward, 0.86-0.93x training (triton-lane-6/fast_activations.jsonl).
ON_CHIP_MAX_ROWS = 128
# The LSTM's and GRU's backward run split-K (Plan.split_k) by default up to this hidden size on CUDA.
# Graphed training against the transpose backward on the H100 (benchmarks/on_chip.py --compare
# split_k, results/h100/triton-lane-7): the LSTM 1.07-1.56x faster at every case of hidden 100-768
# (FlashRNN bf16 1.23x, fp16 1.21x; strict fp32 1.30-1.56x), the GRU 1.05-1.39x at hidden 128-512;
# at hidden 1024 0.67-0.92x but for bf16 at batch 32 (LSTM 1.05x, GRU 1.17x): the partials every
# program writes and reads grow as hidden^2 x batch, 64 MB a step at batch 128, and in TF32 the
# transposed weights no longer fit on chip.
SPLIT_K_MAX_HIDDEN = 768
# Where the weights are 16-bit and a program holds 16 batch rows, the split-K backward multiplies
# its partials 256 units at a time, not 64 (a [256, 16] fp32 result is 32 registers a thread at 4
# warps): each step waits for a wgmma's result before storing it 3 times at hidden 768, not 12.
# Graphed training on the H100 against 64 units (results/h100/triton-lane-8): FlashRNN bf16 and
# fp16 1.07x, theano's LSTM and GRU at batch 32, hidden 512, bf16 1.09-1.11x, glample's LSTM at
# hidden 500 bf16 1.03x. Not for fp32 weights (TF32: spilled 16-32 bytes a thread, 0.99-1.07x) nor
# 32 batch rows (128 units high: 1.00x bf16, 0.95x TF32 with spills; 256: 0.94-0.99x).
SPLIT_K_TALL_ROWS = 256
# Strict fp32's split-K backward (3xTF32, its transposed weights streamed from L2) multiplies its
# partials this many units high (at most the padded width) at 16 or 32 batch rows a program, at 8
# warps (one warpgroup per 64 rows of a partial): half the waits for a wgmma result before a store
# (12 a step at hidden 512, not 24), in 171-219 registers without spills (sm_90, Triton 3.6 on the
# H100, results/h100/triton-lane-11/aot-x3-67974f2.txt; at 4 warps 128 units took all 255 registers
# and spilled 32-240 bytes a thread in 5 of 8 shapes in a local Triton 3.9 compile,
# aot_split_k-x3-local-c8903cc.txt). Graphed training on the H100 against 64 units at 4 warps
# (triton-lane-11): 1.04-1.09x on every fp32 LSTM and GRU case of glample-2016 and
# theano-cudnn-2016 (hidden 100-512, batch 20-128), then 1.03-1.10x on five other shapes. 256
# units at 16 rows were 2-4% faster again at hidden 500-512 but take all 255 registers (spilled 8
# bytes at hidden 500 in Triton 3.9; at 32 rows 88-104 in 3.6): not taken. 64 batch rows a program
# (batch 512) were not measured and keep 64 units.
X3_SPLIT_K_ROWS, X3_SPLIT_K_MAX_BATCH_ROWS = 128, 32
X3_SPLIT_K_WARPS = 8
# At 64 batch rows (partials 64 units high) and 16 units a program (a 64-row tile; taller ones
# were not measured) strict fp32's split-K backward runs 4 warps, not the 8 that 16-bit weights
# need there: 1.14-1.18x the backward kernel at batch 128-256, hidden 512-768 (plan_sweep.py, H100,
# triton-lane-12; it spills either way, 40-64 bytes a thread at 4 warps, 8-88 at 8). TF32's
# resident split-K (0.68x) and the transpose backward (0.76-0.87x) were slower at 4 and keep 8.
X3_SPLIT_K_WIDE_WARPS = 4
# 16-bit weights keep their split-K partials in 16 bits too (Plan.half_partials: half the bytes
# written and read each step, still summed in fp32): graphed training on the H100 1.03-1.11x
# faster than fp32 partials (FlashRNN bf16 1.06x, fp16 1.05x; errors against float64 3.6e-3
# instead of 3.1e-3 in bf16, tolerance 6e-2). With both, 16-bit split-K beats the transpose
# backward up to hidden 1024: in bf16 at batch 32 the LSTM 1.27x and the GRU 1.19x with tall fp32
# partials; at batch 128 (64 rows a program, partials 64 high) 1.12x and 1.00x with 16-bit ones,
# where with fp32 partials it lost (0.73-0.92x). In fp16 with both: 1.31-1.40x at batch 32,
# 1.01-1.12x at 128.
SPLIT_K_16BIT_MAX_HIDDEN = 1024
# Strict fp32 forwards that stream their weights split h once (Plan.split_once), and from this many
# batch rows a program their weights too (Plan.split_w_once).
SPLIT_ONCE, SPLIT_W_ONCE_ROWS = True, 64
# Their chunks: 32 wide, not 64 (BLOCK_K), and six in flight with the weights' copy. At 64 wide
# 8 of 9 split-once forwards spilled under Triton 3.9 (32-200 bytes a thread), at 64 batch rows
# under 3.6 too (152-184); at 32 none does (benchmarks/aot_3xtf32.py). On the H100 (Triton 3.6) 32
# wide took 0.94-1.02x the step time of 64 at 16-32 rows, and six in flight at 64 rows 0.85-0.86x
# (plan_sweep.py --cases spills: results/h100/triton-lane-14).
SPLIT_ONCE_BLOCK_K, SPLIT_W_ONCE_STAGES = 32, 6
# Plan overrides that pick a tile or weight path: given without h_on_chip, they mean the exchange plan.
_EXCHANGE_FIELDS = frozenset({"block_h", "block_k", "w_resident"})


@triton.jit
def _tanh(x):
    """tanh in fp32 from exp: sign(x) (1 - e) / (1 + e) with e = exp(-2|x|); absolute error about
    1e-7, the odd Taylor terms below |x| < 1e-2 keep small arguments relatively accurate too."""
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    big = (1.0 - e) / (1.0 + e)
    small = ax * (1.0 - ax * ax / 3.0)
    y = tl.where(ax < 1e-2, small, big)
    return tl.where(x < 0, -y, y)


@triton.jit
def _tanh_approx(x):
    """tanh on the multi-function unit: PTX ``tanh.approx.f32`` (sm_75 and later), one instruction,
    largest relative error about 2^-11 (PTX ISA, "tanh"). CUDA only (inline PTX: the interpreter
    cannot run it)."""
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _act_tanh(x, FAST: tl.constexpr):
    """tanh, on the MUFU (:func:`_tanh_approx`) when ``FAST``, else :func:`_tanh`."""
    if FAST:
        y = _tanh_approx(x)
    else:
        y = _tanh(x)
    return y


@triton.jit
def _act_sigmoid(x, FAST: tl.constexpr):
    """The logistic sigmoid; when ``FAST`` as ``(1 + tanh(x / 2)) / 2`` on the MUFU (absolute error
    about 2^-12), else ``tl.sigmoid``."""
    if FAST:
        y = 0.5 * _tanh_approx(0.5 * x) + 0.5
    else:
        y = tl.sigmoid(x)
    return y


@triton.jit
def _mma(a, b, acc, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """acc + a @ b with fp32 accumulation. UPCAST widens the operands first: the CPU interpreter
    multiplies bfloat16 tiles wrongly, and bf16 x bf16 products are exact in fp32 anyway."""
    if UPCAST:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        out = tl.dot(a, b, acc, input_precision=PRECISION)
    return out


@triton.jit
def _split_tf32(x):
    """``(hi, lo)`` with ``x == hi + lo`` exactly: ``hi`` is fp32 ``x`` rounded to TF32's 10
    mantissa bits (to nearest, ties away from zero, as ``cvt.rna.tf32.f32``: add half of the
    13 dropped bits' weight, then zero them), ``lo`` the remainder (at most half a TF32 step, so
    12 significant bits), which a TF32 product reads to its own 10 (so ``hi @ b_hi + hi @ b_lo +
    lo @ b_hi`` misses ``a @ b`` by about 2^-22 of it: 3xTF32, the split Triton's ``tf32x3`` and
    CUTLASS make). Integer arithmetic, so the interpreter runs it too. ``lo`` is 0 where ``x`` is
    infinite (not inf - inf), so an infinite operand gives infinite products. (On the H100,
    rounding ``hi`` rather than cutting it lowered the split-once forwards' errors against float64
    by 5-8 %, rounding ``lo`` too changed nothing; what brought them from 1.1-2.2e-6 to 0.6-1.2e-6,
    beside 0.4-1.1e-6 for Triton's in-step ``tf32x3``, was summing the small products apart,
    :func:`_mma_split`: ``results/h100/triton-lane-13``.)"""
    bits = x.to(tl.int32, bitcast=True)
    hi = ((bits + 0x1000) & -8192).to(tl.float32, bitcast=True)  # -8192 == 0xFFFFE000
    lo = tl.where(hi == x, 0.0, x - hi)
    return hi, lo


@triton.jit
def _mma_split(a_hi, a_lo, b_hi, b_lo, big, small):
    """3xTF32 from operands split beforehand (:func:`_split_tf32`): ``(big + a_hi @ b_hi, small +
    a_lo @ b_hi + a_hi @ b_lo)``, three plain TF32 products, the small ones in an accumulator of
    their own (summed into the large one once, after the last chunk: added to the running sum
    inside the tensor core's accumulation, chunk by chunk, they left 2x the error against float64
    on the H100, ``results/h100/triton-lane-13/small-acc-06e49e7``). Splitting inside the step
    instead (Triton's ``tf32x3``) took 28-46 % of a streamed strict fp32 forward step on the H100
    (``results/h100/triton-lane-12/x3-split-cost``)."""
    small = tl.dot(a_lo, b_hi, small, input_precision="tf32")
    small = tl.dot(a_hi, b_lo, small, input_precision="tf32")
    return tl.dot(a_hi, b_hi, big, input_precision="tf32"), small


@triton.jit
def _store_split(ptr, plane, offsets, x, mask):
    """Store fp32 ``x`` split (:func:`_split_tf32`): the high parts at ``ptr + offsets``, the
    remainders one ``plane`` further."""
    hi, lo = _split_tf32(x)
    tl.store(ptr + offsets, hi, mask=mask)
    tl.store(ptr + plane + offsets, lo, mask=mask)


@triton.jit
def _load_f32(ptr, offsets, mask):
    return tl.load(ptr + offsets, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _load_gate_padded(ptr, row_stride, rows, row_mask, c0, H: tl.constexpr, GATES: tl.constexpr,
                      K_PAD: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile ``[BLOCK_B, BLOCK_K]``: columns ``c0 .. c0 + BLOCK_K`` of the gate-padded view of a
    row-major ``[B, GATES * H]`` plane, where view column ``c = g * K_PAD + k`` is element
    ``(row, g * H + k)`` (0 for ``k >= H`` or ``g >= GATES``). With ``GATES = 1`` this is a plain
    ``[B, H]`` plane padded to ``K_PAD`` columns (h in the forward). In the plane's own dtype (it
    feeds tl.dot). These are values other programs wrote before the last barrier, so they are
    read through L2 (``.cg``): an L1 line cached earlier would be stale."""
    c = c0 + tl.arange(0, BLOCK_K)
    gate = c // K_PAD
    k = c % K_PAD
    mask = row_mask[:, None] & ((k < H) & (gate < GATES))[None, :]
    return tl.load(ptr + rows[:, None] * row_stride + (gate * H + k)[None, :], mask=mask, other=0.0,
                   cache_modifier=".cg")


@triton.jit
def _program_tile(B, H: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    """This program's tile: hidden units ``[BLOCK_H]`` (axis 0 of the grid) by batch rows
    ``[BLOCK_B]`` (axis 1), their masks, and ``hid``, the tile's offsets into a ``[B, H]`` plane.
    Returns ``(pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid)``."""
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    units = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    unit_mask = units < H
    row_mask = rows < B
    mask = unit_mask[:, None] & row_mask[None, :]
    hid = rows[None, :] * H + units[:, None]
    return pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid


@triton.jit
def _back_tile(B, H: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, GATES: tl.constexpr):
    """A backward kernel's tile: :func:`_program_tile`'s values, then ``gid`` (the tile's offsets into
    a ``[B, GATES * H]`` plane of gate gradients) and the sizes of a ``[B, H]`` and of a ``[B,
    GATES * H]`` plane (int64: a step's offset is ``t`` times them)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    gid = rows[None, :] * (GATES * H) + units[:, None]
    return (pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid, gid, B.to(tl.int64) * H,
            B.to(tl.int64) * (GATES * H))


@triton.jit
def _previous_h(h_buf_ptr, h0_ptr, t, plane_h, rows, row_mask, HAS_H0: tl.constexpr):
    """Where step ``t`` reads ``h_{t-1}`` and which batch rows are live: slot ``t`` of the
    exchange buffer, except at ``t == 0``, where h0 is read where it lies (or, without h0, no row
    is read and the recurrent term is zero). Returns ``(h_src, live)``."""
    h_src = h_buf_ptr + t * plane_h
    live = row_mask
    if t == 0:
        if HAS_H0:
            h_src = h0_ptr
        else:
            live = rows < 0
    return h_src, live


@triton.jit
def _stacked_rows(pid_h, H: tl.constexpr, GATES: tl.constexpr, GP: tl.constexpr, BLOCK_H: tl.constexpr):
    """Rows of ``W_hh`` (torch.nn layout ``[GATES * H, H]``) in this program's stacked tile, and
    which of them exist: tile row ``m`` is gate ``m // BLOCK_H``, hidden unit
    ``pid_h * BLOCK_H + m % BLOCK_H``."""
    m = tl.arange(0, GP * BLOCK_H)
    gate = m // BLOCK_H
    unit = pid_h * BLOCK_H + m % BLOCK_H
    return gate * H + unit, (gate < GATES) & (unit < H)


@triton.jit
def _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile ``[GP * BLOCK_H, BLOCK_K]``: ``W_hh[w_rows, k0 : k0 + BLOCK_K]``, 0 where the row does
    not exist or ``k >= H``; in the weights' dtype."""
    k = k0 + tl.arange(0, BLOCK_K)
    return tl.load(w_ptr + w_rows[:, None] * H + k[None, :], mask=w_valid[:, None] & (k < H)[None, :], other=0.0)


@triton.jit
def _resident_stack(w_ptr, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr):
    """The resident stacked tile as a tuple of ``CHUNKS`` pieces ``[GP * BLOCK_H, BLOCK_K]``
    (columns ``i * BLOCK_K ..``): hidden 768 is three pieces of 256, not one of 1024, and no piece
    needs more than a few dozen registers per thread on its way into shared memory."""
    pieces = ()
    for i in tl.static_range(CHUNKS):
        pieces = pieces + (_load_stacked_weights(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K),)
    return pieces


@triton.jit
def _stacked_matmul(pieces, w_ptr, w_rows, w_valid, h_ptr, rows, row_live, acc,
                    H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """Forward: ``acc + W_stack @ h^T``, ``[GP * BLOCK_H, BLOCK_B]`` fp32, where h is the ``[B, H]``
    plane at ``h_ptr`` (rows not ``row_live`` read as 0). ``pieces`` is the resident stacked tile
    (:func:`_resident_stack`, kept in shared memory by the compiler); otherwise the weights are
    re-read from global memory (L2) in ``BLOCK_K`` chunks. Either way the reduction stops at the
    chunk holding unit H - 1, not at K_PAD: no chunk of padding."""
    if W_RESIDENT:
        for i in tl.static_range(CHUNKS):
            h = _load_gate_padded(h_ptr, H, rows, row_live, i * BLOCK_K, H, 1, K_PAD, BLOCK_K)
            acc = _mma(pieces[i], tl.trans(h), acc, PRECISION, UPCAST)
    else:
        for k0 in range(0, H, BLOCK_K):
            h = _load_gate_padded(h_ptr, H, rows, row_live, k0, H, 1, K_PAD, BLOCK_K)
            wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, BLOCK_K)
            acc = _mma(wk, tl.trans(h), acc, PRECISION, UPCAST)
    return acc


@triton.jit
def _load_weight_columns(w_t_ptr, units, unit_mask, c0, H: tl.constexpr, GATES: tl.constexpr,
                         K_PAD: tl.constexpr, BLOCK_K: tl.constexpr):
    """Backward's weight tile ``[BLOCK_H, BLOCK_K]`` from ``W_hh^T`` (``[H, GATES * H]``,
    contiguous): row ``j`` is hidden unit ``units[j]``, columns ``c0 ..`` of the gate-padded view
    (column ``g * K_PAD + k`` is ``W_hh[g * H + k, units[j]]``, 0 past H or past the last gate)."""
    return _load_gate_padded(w_t_ptr, GATES * H, units, unit_mask, c0, H, GATES, K_PAD, BLOCK_K)


@triton.jit
def _columns_matmul(w, w_t_ptr, units, unit_mask, g_ptr, rows, row_mask, acc,
                    H: tl.constexpr, GATES: tl.constexpr, GP: tl.constexpr, K_PAD: tl.constexpr,
                    BLOCK_K: tl.constexpr, W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr,
                    UPCAST: tl.constexpr):
    """Backward: ``acc + (d_gates @ W_hh[:, units])^T``, ``[BLOCK_H, BLOCK_B]`` fp32, where
    ``d_gates`` is the ``[B, GATES * H]`` plane at ``g_ptr``. ``w`` is the resident tile
    ``[BLOCK_H, GP * K_PAD]`` of :func:`_load_weight_columns`; otherwise the weights are re-read
    in ``BLOCK_K`` chunks: each real gate's first H columns (a chunk never straddles two gates, and
    none is all padding)."""
    if W_RESIDENT:
        g = _load_gate_padded(g_ptr, GATES * H, rows, row_mask, 0, H, GATES, K_PAD, GP * K_PAD)
        acc = _mma(w, tl.trans(g), acc, PRECISION, UPCAST)
    else:
        CHUNKS: tl.constexpr = (H + BLOCK_K - 1) // BLOCK_K  # per gate
        for i in range(0, GATES * CHUNKS):
            c0 = (i // CHUNKS) * K_PAD + (i % CHUNKS) * BLOCK_K
            g = _load_gate_padded(g_ptr, GATES * H, rows, row_mask, c0, H, GATES, K_PAD, BLOCK_K)
            wk = _load_weight_columns(w_t_ptr, units, unit_mask, c0, H, GATES, K_PAD, BLOCK_K)
            acc = _mma(wk, tl.trans(g), acc, PRECISION, UPCAST)
    return acc


@triton.jit
def _gate_columns(w_t_ptr, units, unit_mask, H: tl.constexpr, GATES: tl.constexpr, K_PAD: tl.constexpr):
    """The on-chip backward's resident weights: one ``[BLOCK_H, K_PAD]`` tile per real gate,
    ``W_hh[g * H + k, units]`` (see :func:`_load_weight_columns`), as a tuple."""
    tiles = ()
    for g in tl.static_range(GATES):
        tiles = tiles + (_load_weight_columns(w_t_ptr, units, unit_mask, g * K_PAD, H, GATES, K_PAD, K_PAD),)
    return tiles


@triton.jit
def _on_chip_columns(w, grads, acc, GATES: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """On-chip backward: ``acc + sum_g w[g] @ grads[g]``, ``[K_PAD, BLOCK_B]`` fp32: every gate's
    gradient of every unit is this program's own (``grads[g]`` ``[K_PAD, BLOCK_B]``, in the
    weights' dtype), so the next step's ``dh`` needs nothing from memory."""
    for g in tl.static_range(GATES):
        acc = _mma(w[g], grads[g], acc, PRECISION, UPCAST)
    return acc


@triton.jit
def _split_stacked_matmul(pieces, w_hi_ptr, w_lo_ptr, w_rows, w_valid, h_ptr, plane_h, rows, row_live, acc,
                          H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                          W_RESIDENT: tl.constexpr, W_COPY: tl.constexpr):
    """:func:`_stacked_matmul` in 3xTF32 with h split once (:attr:`Plan.split_once`): its high
    parts are the ``[B, H]`` plane at ``h_ptr``, its remainders the plane after, each loaded
    straight into the products (h is the operand that goes through shared memory). The weights'
    are ``pieces`` (resident: ``CHUNKS`` high parts, then ``CHUNKS`` remainders), or streamed from
    ``W_hh`` at ``w_hi_ptr`` and split in registers on the way (the left operand of Hopper's
    wgmma may come from registers), or with ``W_COPY`` (:attr:`Plan.split_w_once`) read split from
    the copies at ``w_hi_ptr`` and ``w_lo_ptr`` (twice the bytes from L2)."""
    small = tl.zeros(acc.shape, dtype=tl.float32)
    if W_RESIDENT:
        for i in tl.static_range(CHUNKS):
            h_hi = _load_gate_padded(h_ptr, H, rows, row_live, i * BLOCK_K, H, 1, K_PAD, BLOCK_K)
            h_lo = _load_gate_padded(h_ptr + plane_h, H, rows, row_live, i * BLOCK_K, H, 1, K_PAD, BLOCK_K)
            acc, small = _mma_split(pieces[i], pieces[CHUNKS + i], tl.trans(h_hi), tl.trans(h_lo), acc, small)
    else:
        for k0 in range(0, H, BLOCK_K):
            h_hi = _load_gate_padded(h_ptr, H, rows, row_live, k0, H, 1, K_PAD, BLOCK_K)
            h_lo = _load_gate_padded(h_ptr + plane_h, H, rows, row_live, k0, H, 1, K_PAD, BLOCK_K)
            if W_COPY:
                w_hi = _load_stacked_weights(w_hi_ptr, w_rows, w_valid, k0, H, BLOCK_K)
                w_lo = _load_stacked_weights(w_lo_ptr, w_rows, w_valid, k0, H, BLOCK_K)
            else:
                w_hi, w_lo = _split_tf32(_load_stacked_weights(w_hi_ptr, w_rows, w_valid, k0, H, BLOCK_K))
            acc, small = _mma_split(w_hi, w_lo, tl.trans(h_hi), tl.trans(h_lo), acc, small)
    return acc + small


@triton.jit
def _forward_weights(w_ptr, w_split_ptr, w_plane, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr,
                     CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, SPLIT_ONCE: tl.constexpr):
    """A forward kernel's weights before its time loop: ``(pieces, w_src)``, the resident stacked
    tile (:func:`_resident_stack`; 0 when streamed) and where a streamed step reads them
    (``W_hh``). ``SPLIT_ONCE`` (the kernels' constexpr: 0, 1 for :attr:`Plan.split_once`, 2 with
    :attr:`Plan.split_w_once` too): resident pieces are split (:func:`_split_tf32`: ``CHUNKS``
    high parts, then ``CHUNKS`` remainders); at 2, streamed, the program writes the split of its
    own rows of ``W_hh`` to ``w_split_ptr`` (high parts, then remainders ``w_plane`` further:
    ``[2, G*H, H]`` fp32) and streams from there. No other program reads those rows (programs of
    other batch blocks with the same units write the same bits), so a barrier of this program's
    threads suffices."""
    w_src = w_ptr
    if SPLIT_ONCE:
        if W_RESIDENT:
            highs = ()
            lows = ()
            for i in tl.static_range(CHUNKS):
                hi, lo = _split_tf32(_load_stacked_weights(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K))
                highs = highs + (hi,)
                lows = lows + (lo,)
            pieces = highs + lows
        else:
            pieces = 0
        if SPLIT_ONCE == 2 and not W_RESIDENT:
            w_src = w_split_ptr
            for k0 in range(0, H, BLOCK_K):
                k = k0 + tl.arange(0, BLOCK_K)
                offsets = w_rows[:, None] * H + k[None, :]
                wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, BLOCK_K)
                _store_split(w_split_ptr, w_plane, offsets, wk, w_valid[:, None] & (k < H)[None, :])
            tl.debug_barrier()
    elif W_RESIDENT:
        pieces = _resident_stack(w_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS)
    else:
        pieces = 0
    return pieces, w_src


@triton.jit
def _split_h0(h, h_split_ptr, plane_h, hid, mask, counter_ptr, HAS_H0: tl.constexpr, SPLIT_ONCE: tl.constexpr):
    """Before the first step of a forward that splits h once (:attr:`Plan.split_once`): this
    program's tile of h0 (fp32 ``h``) split into slot 0 of the exchange buffer, then a grid barrier
    so that every program's is there. Returns the barriers passed (0 or 1), which every later
    wait's target counts."""
    passed = 0
    if SPLIT_ONCE and HAS_H0:
        _store_split(h_split_ptr, plane_h, hid, h, mask)
        _grid_barrier(counter_ptr, tl.num_programs(0))
        passed = 1
    return passed


@triton.jit
def _publish_h(h, h_buf_ptr, h_split_ptr, t, T, plane_h, hid, mask, counter_ptr, ON_CHIP: tl.constexpr,
               SPLIT_ONCE: tl.constexpr):
    """Step ``t``'s end: store ``h_t`` (fp32 ``[BLOCK_H, BLOCK_B]``) as the output ``h_buf[t+1]``
    and where step ``t + 1`` reads it, then (exchange plans, not the last step) arrive at the
    barrier. With ``SPLIT_ONCE`` the next step reads it split (:func:`_store_split`) from slot
    ``(t + 1) % 2`` of the exchange buffer ``[2, 2, B, H]`` (two slots suffice: a program writes
    slot ``s`` again only after every program has arrived once more, so has read it), and the
    output, which no program reads, is stored after the arrival."""
    out = h_buf_ptr + (t + 1) * plane_h + hid
    if SPLIT_ONCE:
        _store_split(h_split_ptr + ((t + 1) % 2) * (2 * plane_h), plane_h, hid, h, mask)
    else:
        tl.store(out, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP and t + 1 < T:
        _arrive(counter_ptr)
    if SPLIT_ONCE:
        tl.store(out, h, mask=mask)


@triton.jit
def _recurrent_matmul(pieces, h, w_ptr, w_rows, w_valid, h_buf_ptr, h0_ptr, h_split_ptr, w_plane, t, plane_h, rows,
                      row_mask, acc, H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                      W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, HAS_H0: tl.constexpr,
                      PRECISION: tl.constexpr, UPCAST: tl.constexpr, SPLIT_ONCE: tl.constexpr):
    """Forward step ``t``'s ``acc + W_stack @ h_{t-1}^T``. On chip (one program holds every unit
    of its batch rows, ``BLOCK_H == K_PAD``), ``h`` itself (fp32 ``[K_PAD, BLOCK_B]``, rounded to
    the weights' dtype as the exchange buffer would hold it) is the operand; otherwise every
    program's ``h_{t-1}`` is read back from the exchange buffer (:func:`_previous_h`), or with
    ``SPLIT_ONCE`` from slot ``t % 2`` of the split one (:func:`_publish_h`; h0's is slot 0),
    the weights from ``w_ptr`` (their high parts) and ``w_ptr + w_plane`` (:func:`_forward_weights`)."""
    if ON_CHIP:
        acc = _mma(pieces[0], h.to(pieces[0].dtype), acc, PRECISION, UPCAST)
    elif SPLIT_ONCE:
        live = row_mask
        if not HAS_H0:
            if t == 0:  # no h0: no row is read, the recurrent term is zero
                live = rows < 0
        acc = _split_stacked_matmul(pieces, w_ptr, w_ptr + w_plane, w_rows, w_valid,
                                    h_split_ptr + (t % 2) * (2 * plane_h), plane_h, rows, live, acc, H, K_PAD,
                                    BLOCK_K, CHUNKS, W_RESIDENT, SPLIT_ONCE == 2)
    else:
        h_src, live = _previous_h(h_buf_ptr, h0_ptr, t, plane_h, rows, row_mask, HAS_H0)
        acc = _stacked_matmul(pieces, w_ptr, w_rows, w_valid, h_src, rows, live, acc, H, K_PAD, BLOCK_K, CHUNKS,
                              W_RESIDENT, PRECISION, UPCAST)
    return acc


@triton.jit
def _split_gates(acc, BLOCK_H: tl.constexpr, BLOCK_B: tl.constexpr):
    """The four ``[BLOCK_H, BLOCK_B]`` gate blocks of a stacked ``[4 * BLOCK_H, BLOCK_B]`` tile, in
    order. (Triton splits only a last dimension of size 2: the gate index goes last as two bits.)"""
    a = tl.permute(tl.reshape(acc, [2, 2, BLOCK_H, BLOCK_B]), (2, 3, 0, 1))  # [.., hi bit, lo bit]
    even, odd = tl.split(a)  # lo bit 0: gates 0, 2; lo bit 1: gates 1, 3
    g0, g2 = tl.split(even)
    g1, g3 = tl.split(odd)
    return g0, g1, g2, g3


@triton.jit
def _stack_gates(g0, g1, g2, g3, BLOCK_H: tl.constexpr, BLOCK_B: tl.constexpr):
    """The inverse of :func:`_split_gates`: four ``[BLOCK_H, BLOCK_B]`` tiles as one ``[4 *
    BLOCK_H, BLOCK_B]`` tile, gate g at rows ``g * BLOCK_H ..`` (the stacked layout)."""
    a = tl.join(tl.join(g0, g2), tl.join(g1, g3))  # [.., hi bit, lo bit] of the gate index
    return tl.reshape(tl.permute(a, (2, 3, 0, 1)), [4 * BLOCK_H, BLOCK_B])


@triton.jit
def _load_stacked_weights_t(w_ptr, w_rows, w_valid, k0, H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile ``[BLOCK_K, GP * BLOCK_H]``: the transpose of :func:`_load_stacked_weights`' tile,
    ``W_hh[w_rows, k0 : k0 + BLOCK_K]^T`` (read transposed from ``W_hh`` itself, no copy)."""
    k = k0 + tl.arange(0, BLOCK_K)
    return tl.load(w_ptr + k[:, None] + w_rows[None, :] * H, mask=(k < H)[:, None] & w_valid[None, :], other=0.0)


@triton.jit
def _resident_stack_t(w_ptr, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr):
    """The split-K backward's resident weights: ``W_stack^T`` as a tuple of ``CHUNKS`` pieces
    ``[BLOCK_K, GP * BLOCK_H]`` (units ``i * BLOCK_K ..``), each the left operand of one matmul."""
    pieces = ()
    for i in tl.static_range(CHUNKS):
        pieces = pieces + (_load_stacked_weights_t(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K),)
    return pieces


@triton.jit
def _partials_matmul(pieces, w_ptr, w_rows, w_valid, grads, part_ptr, rows, row_mask, H: tl.constexpr,
                     BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr,
                     PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """Split-K backward: this program's share of every unit's ``dh_{t-1}``, ``W_stack^T @ grads``
    (``grads`` the stacked gate gradients of its own units ``[GP * BLOCK_H, BLOCK_B]``, in the
    weights' dtype), accumulated in fp32 and written in the plane's dtype (fp32, or 16 bits:
    ``Plan.half_partials``) to the ``[B, H]`` plane at ``part_ptr`` ``BLOCK_K`` units at a time.
    ``pieces``: the resident ``W_stack^T`` pieces ``[BLOCK_K, GP * BLOCK_H]``; otherwise re-read
    from L2 each step."""
    for i in tl.static_range(CHUNKS):
        if W_RESIDENT:
            wk = pieces[i]
        else:
            wk = _load_stacked_weights_t(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K)
        k = i * BLOCK_K + tl.arange(0, BLOCK_K)
        part = _mma(wk, grads, tl.zeros([BLOCK_K, grads.shape[1]], dtype=tl.float32), PRECISION, UPCAST)
        tl.store(part_ptr + rows[None, :] * H + k[:, None], part.to(part_ptr.dtype.element_ty),
                 mask=(k < H)[:, None] & row_mask[None, :])


@triton.jit
def _split_k_arrive(pieces, w_ptr, w_rows, w_valid, grads, partials_ptr, s, programs: tl.constexpr, counter_ptr,
                    plane_h, rows, row_mask, H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """Reverse step ``s`` of a split-K backward, first half: this program's partials of every
    unit's ``dh_{t-1}`` from its stacked gate gradients ``grads`` (:func:`_partials_matmul`) into
    slot ``s % 2`` of ``partials [2, programs, B, H]``, then its arrival at the step's barrier
    (:func:`_arrive`); :func:`_split_k_sum` is the second half. Two slots by step parity: a program
    writes step s+1's partials only after the barrier of step s, which every program reaches only
    after summing step s-1's, so nothing still being read is overwritten."""
    slot = partials_ptr + (s % 2) * programs * plane_h
    _partials_matmul(pieces, w_ptr, w_rows, w_valid, grads, slot + tl.program_id(0) * plane_h, rows, row_mask, H,
                     BLOCK_K, CHUNKS, W_RESIDENT, PRECISION, UPCAST)
    _arrive(counter_ptr)


@triton.jit
def _split_k_sum(partials_ptr, s, programs: tl.constexpr, counter_ptr, plane_h, hid, mask):
    """Reverse step ``s`` of a split-K backward, second half (after :func:`_split_k_arrive`): wait
    for every program's partials of the step (:func:`_wait`), then sum this program's units'
    slices (:func:`_sum_partials`): the part of ``dh_{t-1}`` that passes through ``W_hh``."""
    _wait(counter_ptr, programs * (s + 1))
    return _sum_partials(partials_ptr + (s % 2) * programs * plane_h, programs, plane_h, hid, mask)


@triton.jit
def _sum_partials(part_ptr, programs: tl.constexpr, plane_h, hid, mask):
    """Split-K backward, after the barrier: this program's units' ``dh_{t-1}`` ``[BLOCK_H,
    BLOCK_B]`` fp32, the sum of the ``programs`` partial planes ``[B, H]`` at ``part_ptr`` (one
    per program of the batch block). One tile load per plane, unrolled and added in the tile's own
    layout: every load can be in flight at once and no sum crosses threads (a 3-D load summed over
    its first axis cost 4.6 us a step at 48 programs on the H100: three shared-memory reductions
    in a row, each waiting for its load). Read through L2 (``.cg``): other programs wrote them."""
    acc = tl.zeros(hid.shape, dtype=tl.float32)
    for p in tl.static_range(programs):
        acc += tl.load(part_ptr + p * plane_h + hid, mask=mask, other=0.0, cache_modifier=".cg").to(tl.float32)
    return acc


@triton.jit
def _gate_bias(b_ih_ptr, b_hh_ptr, offsets, mask, HAS_BIAS: tl.constexpr, BOTH: tl.constexpr):
    """``b_ih[offsets] (+ b_hh[offsets] if BOTH)`` in fp32 as a ``[BLOCK_H, 1]`` column (0
    without bias)."""
    if HAS_BIAS:
        b = _load_f32(b_ih_ptr, offsets, mask)
        if BOTH:
            b += _load_f32(b_hh_ptr, offsets, mask)
    else:
        b = tl.zeros(offsets.shape, dtype=tl.float32)
    return b[:, None]


@triton.jit
def _grid_barrier(counter_ptr, target):
    """Wait until ``target`` arrivals have been counted at ``counter_ptr`` (ours included):
    :func:`_arrive` then :func:`_wait`."""
    _arrive(counter_ptr)
    _wait(counter_ptr, target)


@triton.jit
def _arrive(counter_ptr):
    """Count this program's arrival at ``counter_ptr``, publishing every store its threads made
    before: the CTA barrier first makes every thread's stores part of what the release publishes
    (as CUDA cooperative groups' grid sync does). The release waits for this thread's memory
    operations in flight, so the kernels issue what need not be published (saved activations or
    gate gradients, the next step's loads) after the arrival and before :func:`_wait`: graphed
    training 1.06x faster at FlashRNN's shape, 0.99-1.07x elsewhere (H100,
    ``results/h100/triton-lane-9``)."""
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")


@triton.jit
def _wait(counter_ptr, target):
    """Wait until ``target`` arrivals have been counted at ``counter_ptr``.

    The acquire spin makes the other programs' stores visible before anyone reads them. (Polling
    with ``ld.acquire`` instead of the atomic read, by every thread or by thread 0 alone, was no
    faster on the H100: 0.83-1.19 against 0.81-0.96 µs per step, docs/kernels.md.) With one
    program the wait is satisfied by our own arrival, so the same code runs under the interpreter;
    there a lone program whose count falls short of the target would spin forever, so it raises
    instead (plain Python, which only the interpreter runs: the compiler never visits a branch
    whose constexpr condition is false).
    """
    if _INTERPRET:
        if tl.num_programs(0) == 1 and tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < target:
            raise RuntimeError("grid barrier never satisfied: the interpreter runs programs one after "
                               "another, so this wait would never end")
    while tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < target:
        pass
    tl.debug_barrier()


@triton.jit
def _release_counters(counters_ptr):
    """Leave the barrier counters of this batch block at zero for the next launch, so they can be
    allocated once and reused without a memset per call. ``counters_ptr`` holds arrivals
    ``[0, NB)`` and exits ``[NB, 2 NB)`` (NB = batch blocks). Each program counts itself out after
    its last wait; the last one out zeroes both, when no program of the block can still be
    waiting."""
    pid_b = tl.program_id(1)
    arrivals = counters_ptr + pid_b
    exits = counters_ptr + tl.num_programs(1) + pid_b
    if tl.atomic_add(exits, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
        tl.atomic_xchg(arrivals, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(exits, 0, sem="relaxed", scope="gpu")


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def gates_padded(num_gates: int) -> int:
    """Gate blocks in a stacked weight tile: the gate count rounded up to a power of 2."""
    return next_pow2(num_gates)


def k_padded(hidden_size: int) -> int:
    """The reduction length of the recurrent matmul as a tile dimension (power of 2, >= 16)."""
    return max(MIN_BLOCK, next_pow2(hidden_size))


def k_chunks(hidden_size: int, block_k: int) -> tuple[int, int]:
    """``(BLOCK_K, CHUNKS)``: the reduction chunk as launched (at most ``k_padded``) and how many
    cover ``hidden_size``."""
    bk = min(block_k, k_padded(hidden_size))
    return bk, -(-hidden_size // bk)


@dataclass(frozen=True)
class Plan:
    """How one recurrence (one direction of time) is split across programs.

    Attributes:
        block_b: batch rows per program (power of 2, >= 16; rows past batch_size are masked).
        block_h: hidden units per program (power of 2, >= 4).
        w_resident: load the program's recurrent weights once, before the time loop (the compiler
            keeps them in shared memory); otherwise re-read them from L2 in ``block_k`` chunks
            every step.
        block_k: reduction chunk: streamed, the chunk re-read each step; resident (forward), the
            width of the pieces the weights are held in (the backward's resident tile is one piece).
        num_warps: warps per program.
        num_stages: chunks in flight when streaming (Triton's software pipeline of the chunk
            loop: a streamed step is a chain of L2 round trips, so deeper is faster until shared
            memory runs out).
        h_on_chip: one program holds every hidden unit of its batch rows (``block_h`` and
            ``block_k`` equal to :func:`k_padded`, weights resident in one piece), so the step's
            matmul operand (h forward, the gate gradients backward) never leaves its registers:
            no exchange through memory, no grid barrier. For small hidden sizes, where those
            round trips are most of a step.
        fast_activations: the forward computes its gate nonlinearities on the multi-function unit
            (:func:`_tanh_approx`, relative error about 2^-11) instead of from ``exp`` and a
            division: see :func:`fast_activations`.
        split_k: backward (the LSTM's and GRU's, so far) on the forward's split instead of the transpose:
            each program multiplies its own units' gate gradients by its own rows of ``W_hh`` (the
            forward's stacked tile, transposed and resident when it fits) into a partial
            ``dh_{t-1}`` of every unit, and after the barrier sums its units' partials from every
            program (a split-K matmul, K spread over the programs). ``block_k`` is then the height
            of one partial's matmul (64, a wgmma, or :data:`SPLIT_K_TALL_ROWS`). The transpose
            plan instead reads every program's gate gradients and its units' columns of ``W_hh``
            from L2 each step.
        half_partials: split-K only: the partials stored in the weights' dtype (bf16, fp16: half
            the bytes written and read each step; summed in fp32 all the same) instead of fp32.
        split_once: a 3xTF32 forward (strict fp32 on tensor cores, exchange plans) whose operands
            are split into TF32 high parts and remainders once, not inside every product (Triton's
            ``tf32x3``): each program splits its rows of ``W_hh`` before the time loop (into
            shared memory, or a copy in global memory it streams from) and its slice of ``h_t`` as
            it publishes it (two planes, read by the next step straight into its products). The
            same three products per chunk, plain TF32 each (:func:`_mma_split`). Streamed
            weights are split in registers each step unless ``split_w_once``.
        split_w_once: with ``split_once`` and streamed weights: each program writes the split of its
            rows of ``W_hh`` to a copy in global memory before the time loop and streams both
            halves from there (twice the bytes a step from L2, no arithmetic on the way).
    """

    block_b: int
    block_h: int
    w_resident: bool
    block_k: int = BLOCK_K
    num_warps: int = 4
    num_stages: int = 3
    h_on_chip: bool = False
    fast_activations: bool = False
    split_k: bool = False
    half_partials: bool = False
    split_once: bool = False
    split_w_once: bool = False

    def grid(self, batch_size: int, hidden_size: int) -> tuple[int, int]:
        """(programs over hidden units, programs over batch rows)."""
        return -(-hidden_size // self.block_h), -(-batch_size // self.block_b)  # (triton.cdiv costs µs per call)


def resident_piece(block_b: int, element: int, hidden_size: int) -> int:
    """Width (columns) of the pieces a resident forward tile is held and h staged in: 8 KB of h
    (:data:`RESIDENT_PIECE_BYTES`), 64 to 256 columns; 256 for 16-bit weights up to
    :data:`WIDE_PIECE_ROWS` batch rows and :data:`WIDE_PIECE_MAX_HIDDEN` units."""
    if element == 2 and block_b <= WIDE_PIECE_ROWS and hidden_size <= WIDE_PIECE_MAX_HIDDEN:
        return 256
    return max(64, min(256, RESIDENT_PIECE_BYTES // (block_b * element)))


def split_once_level(plan: Plan) -> int:
    """The forward kernels' ``SPLIT_ONCE`` constexpr for ``plan``: 0 (Triton's ``tf32x3`` in every
    product, or no 3xTF32), 1 (:attr:`Plan.split_once`), 2 (and the streamed weights from a split
    copy, :attr:`Plan.split_w_once`)."""
    if not plan.split_once:
        return 0
    return 2 if plan.split_w_once and not plan.w_resident else 1


def split_once_stage_bytes(block_b: int, rows: int, block_k: int, w_copy: bool) -> int:
    """Shared memory one chunk in flight takes in a streamed forward that splits once
    (:attr:`Plan.split_once`), fp32: the high parts and remainders of a ``block_b x block_k``
    piece of h and a ``rows x block_k`` weight chunk (both halves with ``w_copy``,
    :attr:`Plan.split_w_once`). (At batch 128, hidden 1024 with the copy, 64 KB: four in flight,
    the streamed default, would not fit in the H100's 227 KB.)"""
    return (2 * block_b + (2 if w_copy else 1) * rows) * block_k * 4


def resident_bytes(block_b: int, block_h: int, hidden_size: int, num_gates: int, element: int,
                   direction: str) -> int:
    """Shared memory of a resident step. Forward: the weight pieces (up to the one holding unit
    H - 1) plus one staged piece of h (the compiler reuses its buffer: measured by compiling).
    Backward: one weight tile ``GP * K_PAD`` long plus the staged gate gradients."""
    gp, kp = gates_padded(num_gates), k_padded(hidden_size)
    if direction == "forward":
        bk, chunks = k_chunks(hidden_size, resident_piece(block_b, element, hidden_size))
        return (gp * block_h * chunks + block_b) * bk * element
    return (block_h + block_b) * gp * kp * element


@functools.lru_cache(maxsize=None)
def _device_limits(index: int) -> tuple[int, int]:
    props = torch.cuda.get_device_properties(index)
    return props.multi_processor_count, getattr(props, "shared_memory_per_block_optin", H100_SHARED_MEMORY)


def _limits(device: torch.device, multiprocessors: int | None) -> tuple[int, int]:
    """``(multiprocessors, shared memory per block)`` of the CUDA ``device``, or an H100's with
    ``multiprocessors`` of them when planning for a GPU not present."""
    if multiprocessors is not None:
        return multiprocessors, H100_SHARED_MEMORY
    return _device_limits(device.index if device.index is not None else torch.cuda.current_device())


def on_chip_bytes(block_b: int, hidden_size: int, num_gates: int, element: int, direction: str) -> int:
    """Shared memory of an on-chip step (:attr:`Plan.h_on_chip`): forward, the stacked tile
    ``gates_padded * K_PAD`` rows by ``K_PAD``; backward, one ``K_PAD`` square per real gate; plus
    the operand staged for the matmul (``K_PAD x block_b`` per gate backward)."""
    kp = k_padded(hidden_size)
    if direction == "forward":
        return (gates_padded(num_gates) * kp + block_b) * kp * element
    return num_gates * (kp + block_b) * kp * element


def on_chip_default(hidden_size: int, num_gates: int, element: int, precision: str, direction: str,
                    smem: int) -> bool:
    """Whether the default plan keeps h on chip (CUDA, tensor-core products): a stacked tile of
    at most :data:`ON_CHIP_MAX_ROWS` rows that fits in shared memory; with 3xTF32 only for the RNN's
    single gate (the split of a resident 3xTF32 operand is held in registers: at 8 warps the RNN's
    128 x 128 compiled without spills both ways, the LSTM's four 64 x 64 backward tiles spilled
    1.3 KB per thread; sm_90, Triton 3.6, ``ops/aot.py``)."""
    rows = gates_padded(num_gates) * k_padded(hidden_size)
    return (rows <= ON_CHIP_MAX_ROWS and (precision != "tf32x3" or num_gates == 1)
            and on_chip_bytes(MIN_BLOCK, hidden_size, num_gates, element, direction) <= smem - SHARED_MEMORY_MARGIN)


def on_chip_warps(hidden_size: int, num_gates: int, precision: str) -> int:
    """Warps of an on-chip program: 8 where 4 spilled (sm_90, Triton 3.6, ``ops/aot.py``): a
    stacked tile of 512 rows or more (LSTM and GRU at hidden 128 in bf16: 24-576 bytes per thread at
    4 warps, none at 8), any 3xTF32 tile (its split in registers), and widths of 256."""
    kp = k_padded(hidden_size)
    return 8 if gates_padded(num_gates) * kp >= 512 or precision == "tf32x3" or kp >= 256 else 4


def default_block_b(batch_size: int, hidden_programs: int, slots: int, split: bool) -> int:
    """Batch rows per program on CUDA, given ``hidden_programs`` (programs per batch block at the
    smallest ``block_h``) and ``slots`` (programs that can be resident).

    With ``split``: the fewest rows, 16 then 32, at which every batch block's programs fit without
    a taller weight tile (which could leave shared memory: not swept): a program's step is a
    matmul ``block_b`` columns wide, and batch blocks never wait for each other, so more of them
    cost no step time. Otherwise, or where neither fits: the batch, up to :data:`MAX_BLOCK_B` rows.
    On the H100, the kernels alone (``benchmarks/plan_sweep.py``): forward, 16 rows took 0.71-0.80x
    the step time of 32 at batch 20-32 and 32 rows 0.54-0.64x of 64 at batch 128 (docs/kernels.md,
    round 2), 16 against 32 at batch 64-128 0.72-0.89x (``--cases rows``,
    ``results/h100/batch-rows``: the LSTM and GRU at hidden 128, the LSTM at 256 and 512; strict
    fp32, TF32, bf16); backward (``--cases rows_backward``), against the whole batch: the RNN's
    0.71-0.88x (hidden 500-512, batch 20-128), the LSTM's and GRU's transpose backward in TF32 at
    hidden 1024 0.69-0.83x, but in 3xTF32 1.15x (slower): ``choose_plan`` does not split those.
    The split-K backward takes the forward's blocks (0.75-0.88x against 32 rows)."""
    rows = min(max(MIN_BLOCK, next_pow2(batch_size)), MAX_BLOCK_B)
    if split:
        for fewer in (MIN_BLOCK, 2 * MIN_BLOCK):
            if fewer < rows and hidden_programs * triton.cdiv(batch_size, fewer) <= slots:
                return fewer
    return rows


def choose_plan(batch_size: int, hidden_size: int, num_gates: int, dtype: torch.dtype,
                device: torch.device, multiprocessors: int | None = None, precision: str = "ieee",
                direction: str = "forward", **override) -> Plan:
    """The default split for a recurrence, with ``override`` (Plan fields) applied.

    On CUDA every program must be resident at once (they wait for each other), so programs <=
    multiprocessors. Within that:

    - matmuls on tensor cores (half types, or fp32 as TF32), forward: ``block_h`` as small as
      keeps the stacked weight tile 64 rows high (``gates_padded * block_h >= 64``, the height of
      Hopper's wgmma; twice that was 0.63-0.95x as fast graphed on the H100, ``triton-lane-9``),
      weights resident (in shared memory) when they and a staged piece of h fit, except 16-bit
      weights at :data:`STREAM_FORWARD_ROWS` batch rows (streamed), held in pieces of
      :func:`resident_piece` columns, at 4 warps (one warpgroup: 8 split the batch columns
      between two, each reading all the weights) unless 64 batch rows of 16-bit weights need 8
      (fp32 weights keep 4 there: :data:`FP32_WIDE_FORWARD_WARPS`);
    - backward: the weight tile is ``block_h`` rows high; resident only when that is a whole
      wgmma (``block_h >= 64``, the RNN): a shorter tile goes through mma.sync, whose operands the
      compiler hoists into registers, where 64 KB of weights spill (2.3 KB per thread seen);
      otherwise streamed from L2;
    - 3xTF32 (``precision="tf32x3"``: strict fp32 on tensor cores, three products per step; and
      the RNN's backward in ``tf32``): the TF32 plans, but the forward's weights resident only up to
      :data:`X3_RESIDENT_K` columns and the backward's never, in chunks of 64: the split of a
      resident operand into its TF32 high part and remainder is hoisted out of the loop into
      registers (spilled: 2.4 KB per thread for the LSTM forward at hidden 500, 0.4-3.4 KB for
      the resident RNN backward, sm_90), and 128-wide streamed backward chunks spilled 72-112 bytes;
    - strict fp32 on FMA units (``precision="ieee"``): the smallest ``block_h`` (more programs,
      less arithmetic each) and weights always streamed: a resident FMA operand is moved into
      registers whole and spills (seen: 4 KB of local memory per thread at hidden 100);
    - the LSTM's and GRU's backward on tensor cores up to :data:`SPLIT_K_MAX_HIDDEN`, or
      :data:`SPLIT_K_16BIT_MAX_HIDDEN` for 16-bit weights (not on chip): split-K
      (:attr:`Plan.split_k`, :func:`_split_k_fields`): the forward's programs, each multiplying its
      own units' gate gradients by its own rows of ``W_hh`` into partials summed after the barrier;
    - h on chip (:attr:`Plan.h_on_chip`) instead, where :func:`on_chip_default` allows it (tensor
      cores, stacked tiles of at most :data:`ON_CHIP_MAX_ROWS` rows that fit): 16 batch rows and
      every unit per program, :func:`on_chip_warps` warps.

    Under the interpreter one program owns all hidden units of its batch block, on chip unless an
    override asks for a tile or weight path (``block_h``, ``block_k``, ``w_resident``) without
    ``h_on_chip``.
    ``multiprocessors`` stands in for the CUDA device's count (to plan for a GPU not present).
    An override named ``backward_<field>`` applies to the backward plan only, as ``split_k`` does;
    one named ``forward_<field>`` to the forward plan only.

    Raises:
        ValueError: a plan whose programs cannot all be resident (more programs than
            multiprocessors on CUDA, more than one program per batch block under the interpreter),
            a block size that is not a power of 2 of its minimum, or an on-chip plan whose tile
            is not one resident piece of every unit or does not fit in shared memory.
    """
    element = torch.empty((), dtype=dtype).element_size()
    gp, kp = gates_padded(num_gates), k_padded(hidden_size)
    # One direction's choices: split_k and any field named backward_<field> for the backward, any
    # named forward_<field> for the forward (the other direction's plan is the same either way, so
    # one direction can be compared under one override).
    one_way = {prefix: {k.removeprefix(prefix): override.pop(k) for k in list(override) if k.startswith(prefix)}
               for prefix in ("forward_", "backward_")}
    override.pop("split_k" if direction == "forward" else "split_once", None)  # one direction's fields
    override.update(one_way[f"{direction}_"])
    tensor_cores = dtype != torch.float32 or precision in ("tf32", "tf32x3")
    # The products this direction runs (the RNN's TF32 backward is 3xTF32: backward_precision)
    step_precision = backward_precision(precision, num_gates) if direction == "backward" else precision
    exchange_asked = not _EXCHANGE_FIELDS.isdisjoint(override) and "h_on_chip" not in override
    if device.type == "cuda":
        slots, smem = _limits(device, multiprocessors)
        bh = max(MIN_BLOCK_H, 64 // gp) if tensor_cores else MIN_BLOCK_H
        # Batch blocks of 16 or 32 rows (default_block_b): every forward, and backwards on tensor
        # cores but the LSTM's and GRU's in 3xTF32, whose transpose backward was slower split (their
        # split-K backward takes the forward's blocks anyway). FMA backwards were not measured.
        split_rows = direction == "forward" or (tensor_cores and not (step_precision == "tf32x3" and num_gates > 1))
        bb = override.get("block_b", default_block_b(batch_size, triton.cdiv(hidden_size, bh), slots, split_rows))
        nb = triton.cdiv(batch_size, bb)
        while triton.cdiv(hidden_size, bh) * nb > slots and bh < MAX_BLOCK_H:
            bh *= 2
        bh = override.get("block_h", bh)
        fits = resident_bytes(bb, bh, hidden_size, num_gates, element, direction) <= smem - SHARED_MEMORY_MARGIN
        resident = tensor_cores and fits and (direction == "forward" or bh >= 64)
        if direction == "forward" and element == 2 and bb >= STREAM_FORWARD_ROWS:
            resident = False
        # 3xTF32 (strict fp32 both ways; the RNN's TF32 backward: backward_precision)
        x3 = step_precision == "tf32x3"
        if x3:
            resident = resident and direction == "forward" and k_padded(hidden_size) <= X3_RESIDENT_K
        warps = 8 if bb >= 64 or (resident and direction == "backward") else 4
        if direction == "forward" and bb >= 64 and tensor_cores and element == 4 and gp * bh == 64:
            warps = FP32_WIDE_FORWARD_WARPS  # (a 64-row weight tile: taller ones were not measured)
        # Streamed chunks: fewer, larger round trips, several in flight (a guess; the device sweeps it).
        # Resident (forward): the width of the pieces the weights are held in.
        # Strict fp32 backward: 16-wide chunks (0.66-0.72x the kernel time of 32 in the H100 sweep).
        # 3xTF32 backward: 64-wide chunks (128 spilled 72-112 bytes per thread, sm_90; the split-K
        # backward then widens its partials to X3_SPLIT_K_ROWS at 8 warps: _split_k_fields).
        block_k = (128 if direction == "backward" and not x3 else BLOCK_K) if tensor_cores else (
            16 if direction == "backward" else 32)
        if resident and direction == "forward":
            block_k = resident_piece(bb, element, hidden_size)
        stages = 4 if tensor_cores else 3
        # (Past 16 x multiprocessors batch rows its programs could not all be resident: exchange.)
        on_chip = override.get("h_on_chip", not exchange_asked and tensor_cores and on_chip_default(
            hidden_size, num_gates, element, step_precision, direction, smem) and -(-batch_size // MIN_BLOCK) <= slots)
        if on_chip:  # the fewest rows per program: batch blocks run side by side, never waiting
            bb, bh, resident, block_k = MIN_BLOCK, kp, True, kp
            warps = on_chip_warps(hidden_size, num_gates, step_precision)
    else:
        slots = None
        bb = max(MIN_BLOCK, next_pow2(batch_size))
        bh = max(MIN_BLOCK_H, next_pow2(hidden_size))
        resident, warps, block_k, stages = True, 4, BLOCK_K, 3
        on_chip = override.get("h_on_chip", not exchange_asked)  # one program per batch block already
        if on_chip:
            bh, block_k = kp, kp
    fast = device.type == "cuda" and direction == "forward" and fast_activations(dtype, precision)
    x3_streamed = (SPLIT_ONCE and device.type == "cuda" and direction == "forward" and precision == "tf32x3"
                   and not on_chip and not resident)
    # (Its chunks follow an override of split_once, so that asking for none gives the plan without.)
    x3_streamed = override.get("split_once", x3_streamed)
    split_w_once = override.get("split_w_once", x3_streamed and bb >= SPLIT_W_ONCE_ROWS)
    if x3_streamed and not resident:
        block_k, stages = SPLIT_ONCE_BLOCK_K, SPLIT_W_ONCE_STAGES if split_w_once else stages
    fields = {"block_b": bb, "block_h": bh, "w_resident": resident, "num_warps": warps, "block_k": block_k,
              "num_stages": stages, "h_on_chip": on_chip, "fast_activations": fast, "split_once": x3_streamed,
              "split_w_once": split_w_once}
    split_default = (device.type == "cuda" and num_gates in (3, 4) and tensor_cores and not on_chip
                     and hidden_size <= (SPLIT_K_16BIT_MAX_HIDDEN if element == 2 else SPLIT_K_MAX_HIDDEN))
    if direction == "backward" and override.get("split_k", split_default):
        if num_gates not in (3, 4):
            raise ValueError("split_k is the LSTM's and GRU's backward only, so far")
        fields.update(_split_k_fields(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision,
                                      step_precision, override))
    plan = Plan(**{**fields, **override})
    if device.type == "cuda" and plan.split_once and not plan.w_resident and "num_stages" not in override:
        # As many chunks in flight as shared memory holds (each has two fp32 tiles of h, one or two of W).
        stage = split_once_stage_bytes(plan.block_b, gp * plan.block_h, plan.block_k, plan.split_w_once)
        plan = dataclasses.replace(plan, num_stages=max(1, min(plan.num_stages, (smem - SHARED_MEMORY_MARGIN) // stage)))
    if plan.fast_activations and device.type != "cuda":
        raise ValueError("fast_activations needs CUDA (inline PTX, which the interpreter cannot run)")
    if plan.split_once and (direction != "forward" or plan.h_on_chip or dtype != torch.float32
                            or (device.type == "cuda" and precision != "tf32x3")):
        raise ValueError("split_once is for 3xTF32 forwards that exchange h (float32 weights, strict fp32 on "
                         "CUDA), not on chip")
    if plan.split_k and plan.h_on_chip:
        raise ValueError("split_k and h_on_chip exclude each other (an on-chip backward exchanges nothing)")
    if plan.h_on_chip and not (plan.w_resident and plan.block_h == kp and plan.block_k == kp):
        raise ValueError(f"h_on_chip needs resident weights and block_h = block_k = {kp} at hidden_size "
                         f"{hidden_size}, got {plan.block_h}, {plan.block_k}")
    if plan.h_on_chip and slots is not None and (
            on_chip_bytes(plan.block_b, hidden_size, num_gates, element, direction) > smem - SHARED_MEMORY_MARGIN):
        raise ValueError(f"an on-chip tile at hidden_size {hidden_size} does not fit in shared memory")
    for name, least in (("block_b", MIN_BLOCK), ("block_h", MIN_BLOCK_H), ("block_k", MIN_BLOCK)):
        value = getattr(plan, name)
        if value < least or value != next_pow2(value):
            raise ValueError(f"{name} must be a power of 2 >= {least}, got {value}")
    nh, nb = plan.grid(batch_size, hidden_size)
    if slots is None and nh > 1 and not INTERPRETER_PROGRAMS_CONCURRENT:
        raise ValueError(f"{nh} programs per batch block would wait for each other forever under "
                         "the interpreter (it runs programs one after another); use block_h >= hidden_size")
    if slots is not None and nh * nb > slots:
        raise ValueError(f"{nh * nb} programs cannot all be resident on {slots} multiprocessors "
                         f"(batch_size {batch_size}, hidden_size {hidden_size})")
    return plan


def split_k_pieces(hidden_size: int, block_k: int) -> int:
    """The split-K backward's partial matmuls per step: pieces of ``block_k`` units covering
    ``hidden_size`` (not padded to a power of 2, unlike :func:`k_chunks`)."""
    return -(-hidden_size // block_k)


def _split_k_fields(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, step_precision,
                    override) -> dict:
    """The split-K backward's plan fields (:attr:`Plan.split_k`): the forward's programs (its
    ``block_b`` and ``block_h``, exchange plan), ``W_stack^T`` resident where it and the staged
    gradients fit in shared memory (never for 3xTF32, whose resident split lands in registers),
    partial matmuls 64 units high (a wgmma), or :data:`SPLIT_K_TALL_ROWS` (at most the padded
    width) for resident 16-bit weights at 16 batch rows, or :data:`X3_SPLIT_K_ROWS` for 3xTF32 at
    16-32 rows (at :data:`X3_SPLIT_K_WARPS`), partials in 16 bits for 16-bit weights,
    4 warps (8 for 64 batch rows: 4 spilled 32 bytes per thread at batch 128, hidden
    1024, bf16, sm_90; 3xTF32 keeps :data:`X3_SPLIT_K_WIDE_WARPS` there)."""
    tiles = {k: override[k] for k in ("block_b", "block_h") if k in override}
    forward = choose_plan(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, "forward",
                          h_on_chip=False, **tiles)
    element = torch.empty((), dtype=dtype).element_size()
    rows = gates_padded(num_gates) * forward.block_h
    cuda = device.type == "cuda"
    smem = _limits(device, multiprocessors)[1] - SHARED_MEMORY_MARGIN if cuda else 0
    x3 = step_precision == "tf32x3"
    warps = (X3_SPLIT_K_WIDE_WARPS if x3 and rows == 64 else 8) if forward.block_b >= 64 else 4
    # Partial heights to try, tallest first; the first whose weights fit stays resident.
    if cuda and element == 2 and forward.block_b == MIN_BLOCK:
        heights = (min(SPLIT_K_TALL_ROWS, k_padded(hidden_size)), BLOCK_K)
    elif cuda and x3 and forward.block_b <= X3_SPLIT_K_MAX_BATCH_ROWS and k_padded(hidden_size) >= X3_SPLIT_K_ROWS:
        heights, warps = (X3_SPLIT_K_ROWS,), X3_SPLIT_K_WARPS
    else:
        heights = (BLOCK_K,)
    for block_k in heights:
        pieces = split_k_pieces(hidden_size, block_k) * block_k
        resident = not cuda or (not x3 and (pieces + forward.block_b) * rows * element <= smem)
        if resident:
            break
    return {"block_b": forward.block_b, "block_h": forward.block_h, "w_resident": resident, "block_k": block_k,
            "num_warps": warps, "num_stages": 3, "h_on_chip": False, "split_k": True, "half_partials": element == 2}


STRICT_FP32_DEFAULT = "tf32x3"  # the products of float32 with TF32 off (see dot_precision)


def dot_precision(dtype: torch.dtype, strict_fp32: str = STRICT_FP32_DEFAULT) -> str:
    """tl.dot input precision for ``dtype``: ``tf32`` where torch allows TF32 matmuls (the setting
    rnnbench's ``tf32`` dtype turns on), else ``strict_fp32`` for float32 on CUDA, ``ieee`` under
    the interpreter (it multiplies in fp32 whatever it is asked); ignored for half types.

    ``strict_fp32`` is ``tf32x3`` (default: Triton's 3xTF32, each operand split into a TF32 high
    part and a TF32 remainder, three tensor-core products summed in fp32, about 2^-21 relative
    error per product against fp32's 2^-24, the split NVIDIA's CUTLASS calls 3xTF32) or ``ieee``
    (FMA units, bit-for-bit fp32 products). Either passes the float64 check at fp32's tolerance.
    """
    if dtype != torch.float32 or INTERPRET:
        return "ieee"
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return strict_fp32


def fast_activations(dtype: torch.dtype, precision: str) -> bool:
    """Whether a forward in ``dtype`` with products in ``precision`` computes its nonlinearities on
    the multi-function unit (``tanh.approx.f32``, relative error about 2^-11): wherever the
    products themselves already round to 2^-11 or coarser -- bf16 (2^-9), fp16 (2^-11) and TF32
    (2^-11) operands -- but not strict fp32. On the H100 the exact tanh (``exp`` and a division)
    cost 0.34-0.38 us of a 1.3-1.6 us on-chip RNN step at hidden 100, the MUFU's 0.05-0.07; the
    kernel's step went from 1.61 to 1.37 us (TF32) and 1.36 to 1.06 (bf16), errors against
    float64 unchanged to two digits (``benchmarks/on_chip_anatomy.py``, ``on_chip.py --compare
    fast_activations``, ``results/h100/triton-lane-6``). The backward reads the saved
    activations; it computes none of its own but the LSTM's ``tanh(c)``, which stays exact."""
    return dtype != torch.float32 or precision == "tf32"


def backward_precision(precision: str, num_gates: int) -> str:
    """The reverse recurrence's dot precision for a forward in ``precision``: the RNN's TF32
    becomes 3xTF32 (about fp32's accuracy on tensor cores, three products); the LSTM's and GRU's
    stays TF32. The gradient to h_0 passes through every step's product: with plain TF32 at
    glample's sizes the RNN's missed the float64 reference by 1.9-2.0 % against TF32's 1 %
    tolerance, the LSTM's by 0.40-0.52 %, and theano's LSTM and GRU by 0.04-0.09 % (H100,
    ``triton-lane-2``); a CPU emulation of the reverse product agrees (RNN 2.2 %, LSTM and GRU
    0.39-0.51 %: ``benchmarks/tf32_backward_error.py``)."""
    return "tf32x3" if precision == "tf32" and num_gates == 1 else precision


def upcast_dot(dtype: torch.dtype) -> bool:
    """Widen dot operands to fp32 (only under the interpreter, whose bf16 dot is wrong)."""
    return INTERPRET and dtype == torch.bfloat16
