"""Pieces every recurrent kernel shares: tile loads, the recurrent matmul, tanh, the grid-wide
barrier. The launch plan (how hidden units and batch rows are split across programs, and the
rules measured for it) is ``ops/plans.py``.

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

import os

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from ..reference import LAYER_NORM_EPS

# Under TRITON_INTERPRET=1 programs run one after another on the CPU, so programs that wait for
# each other would hang: there, one program owns all hidden units of its batch block.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_INTERPRET = tl.constexpr(INTERPRET)  # visible inside kernels
_LAYER_NORM_EPS = tl.constexpr(LAYER_NORM_EPS)  # (the reference's, visible inside kernels)


@triton.jit
def _wait_prior(PDL: tl.constexpr):
    """Where the kernel was launched by programmatic dependent launch (``PDL``,
    ``launch.dependent_launch``): wait until the launch ahead of it on the stream has finished and
    its writes are visible (PTX ``griddepcontrol.wait``, CUDA's ``cudaGridDependencySynchronize``).
    Before this a kernel reads only what that launch does not write, and writes nothing."""
    if PDL:
        gdc_wait()


@triton.jit
def _launch_dependents(PDL: tl.constexpr):
    """Let a kernel launched after this one by programmatic dependent launch start once every
    program of this one has come here (PTX ``griddepcontrol.launch_dependents``); it waits for this
    launch's end itself (:func:`_wait_prior`) before it reads what this writes."""
    if PDL:
        gdc_launch_dependents()


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
def _pow2_above(m, SHIFT: tl.constexpr = 0):
    """``(s, 1 / s)`` for fp32 ``m >= 0``: the power of two ``s`` with ``m / s`` in ``[2^(SHIFT-1),
    2^SHIFT)`` (``SHIFT`` 0: ``m < s <= 2m``), from ``m``'s exponent bits, so ``x / s`` and ``x *
    s`` are exact; clamped so that both are normal fp32 (``m`` 0 or far below ``2^SHIFT`` gives
    ``s`` 2^-125 or so, ``m`` infinite or NaN a finite ``s``)."""
    e = (m.to(tl.int32, bitcast=True) >> 23) & 0xFF
    e = tl.minimum(tl.maximum(tl.maximum(e, 1), SHIFT), 252)
    return ((e + 1 - SHIFT) << 23).to(tl.float32, bitcast=True), ((253 - e + SHIFT) << 23).to(tl.float32, bitcast=True)


# Half operands (SPLIT_ONCE 3, :attr:`Plan.half_operands`): each row of W_hh, and a program's batch
# rows of h, are divided by a power of two that brings their largest magnitude (h: a bound of it) into
# [2^14, 2^15) before its rounding to fp16: below fp16's 65504, and 28 binades above its
# subnormals (2^-14), where TF32's 8-bit exponent would have kept its 11 bits too.
HALF_SHIFT = tl.constexpr(15)


@triton.constexpr_function
def _start_chunk(rows, wide, k_pad):
    """The columns of a chunk in a forward's passes over its rows before the time loop
    (:func:`_half_weights`, :func:`_copy_rows`, :func:`_half_h_scales`): 32 KB of fp32 over
    ``rows`` rows, 64 fp32 a thread at 4 warps (64 KB where ``wide``: 64 batch rows, 8 warps), at
    most ``k_pad``. One rule for the three, so that each pass reads the rows as the others do."""
    width = (16384 if wide else 8192) // rows
    return width if width < k_pad else k_pad


@triton.jit
def _half_weights(w_ptr, w_copy_ptr, w_rows, w_valid, H: tl.constexpr, K_PAD: tl.constexpr,
                  BLOCK_B: tl.constexpr, S: tl.constexpr, w_plane=0, REMAINDER: tl.constexpr = False):
    """Before a half-operand forward's time loop (:attr:`Plan.half_operands`): per row of the
    program's stacked tile of ``W_hh``, the power of two ``s`` with ``max |W[row]| / s`` in ``[2^14,
    2^15)`` (:func:`_pow2_above`), and ``W / s`` rounded to fp16 into the same rows of the copy at
    ``w_copy_ptr`` (``[G*H, S]``: rows ``S`` apart, :attr:`Plan.pad_rows`, columns ``H .. S``
    written as zeros, which the steps read); with ``REMAINDER`` (:attr:`Plan.split_fp16`) split by
    :func:`_split_half` instead, the remainders ``w_plane`` further (``[2, G*H, H]``). Returns
    ``s``. Two passes over the rows, in chunks of 32 KB of
    fp32 (64 KB at 64 batch rows, 8 warps): at hidden 1024 on the H100 a half-operand forward's
    start took 22-33 µs beyond its steps against TF32's 9-27, in these chunks as in 64-column ones
    (unrolled, the loop spilled under Triton 3.9)."""
    ROWS: tl.constexpr = w_rows.shape[0]
    CHUNK: tl.constexpr = _start_chunk(ROWS, BLOCK_B >= 64, K_PAD)
    m = tl.zeros([ROWS], dtype=tl.float32)
    for k0 in range(0, H, CHUNK):
        wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, CHUNK).to(tl.float32)
        m = tl.maximum(m, tl.max(tl.abs(wk), axis=1))
    scale, inv = _pow2_above(m, HALF_SHIFT)
    for k0 in range(0, H, CHUNK):
        k = k0 + tl.arange(0, CHUNK)
        wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, CHUNK).to(tl.float32)
        _store_half(w_copy_ptr, w_plane, w_rows[:, None] * S + k[None, :], wk * inv[:, None],
                    w_valid[:, None] & (k < S)[None, :], REMAINDER)  # (a chunk reaches S: CHUNK >= 8)
    return scale


# 3xFP16 (:attr:`Plan.split_fp16`, and the on-chip RNN's ``Plan.on_chip_split == "fp16"``): an fp16
# remainder is stored times 2^11, as far above fp16's subnormals as its high part (the small
# products are scaled back after).
HALF_LO_SCALE = tl.constexpr(2048.0)


@triton.jit
def _split_half(x, KEEP_INF: tl.constexpr = True, SCALED_LO: tl.constexpr = True):
    """``(hi, lo)`` in fp16 for fp32 ``x`` already divided by its power of two (``|x| < 2^15``):
    ``hi`` is ``x`` rounded to fp16 (11 significant bits, as a TF32 high part), ``lo`` the remainder
    times :data:`HALF_LO_SCALE` rounded to fp16 (11 more), so that ``hi + lo / 2^11`` is ``x`` to
    about 2^-22 of it, or to 2^-36 absolute below fp16's normal range (2^-14); without ``SCALED_LO``
    not multiplied (``hi + lo`` is ``x`` to 2^-25 absolute: ``ops/split_products.py``). ``KEEP_INF``:
    ``lo`` 0 where ``x`` is infinite (not inf - inf); the on-chip RNN's h (at most 1) goes without."""
    hi = x.to(tl.float16)
    high = hi.to(tl.float32)
    if KEEP_INF:
        lo = tl.where(high == x, 0.0, (x - high) * HALF_LO_SCALE if SCALED_LO else x - high)
    else:
        lo = (x - high) * HALF_LO_SCALE if SCALED_LO else x - high
    return hi, lo.to(tl.float16)


@triton.jit
def _store_half(ptr, plane, offsets, x, mask, REMAINDER: tl.constexpr):
    """Store fp32 ``x`` (divided by its power of two) in fp16 at ``ptr + offsets``; with
    ``REMAINDER`` split (:func:`_split_half`), the remainders one ``plane`` further."""
    if REMAINDER:
        hi, lo = _split_half(x)
        tl.store(ptr + offsets, hi, mask=mask)
        tl.store(ptr + plane + offsets, lo, mask=mask)
    else:
        tl.store(ptr + offsets, x.to(tl.float16), mask=mask)


@triton.jit
def _copy_rows(w_ptr, w_copy_ptr, w_rows, w_valid, H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_B: tl.constexpr,
               S: tl.constexpr):
    """Before a forward's time loop with 16-bit weights and :attr:`Plan.pad_rows` (``SPLIT_ONCE``
    5): the program's stacked rows of ``W_hh`` copied as they are into the same rows of the copy at
    ``w_copy_ptr`` (``[G*H, S]``, the weights' dtype), columns ``H .. S`` written as zeros, in the
    chunks :func:`_half_weights` takes."""
    CHUNK: tl.constexpr = _start_chunk(w_rows.shape[0], BLOCK_B >= 64, K_PAD)
    for k0 in range(0, H, CHUNK):
        k = k0 + tl.arange(0, CHUNK)
        wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, CHUNK)
        tl.store(w_copy_ptr + w_rows[:, None] * S + k[None, :], wk, mask=w_valid[:, None] & (k < S)[None, :])


@triton.jit
def _half_h_scales(h0_ptr, rows, row_mask, H: tl.constexpr, K_PAD: tl.constexpr, HAS_H0: tl.constexpr,
                   CARRIES_H0: tl.constexpr):
    """The powers of two that h is divided by before its rounding to fp16, one for the program's
    batch rows (:func:`_pow2_above`): ``(s0, inv0, s, inv)``, ``s0`` h0's (from its rows' largest
    ``|h0|``), ``s`` every later step's, from a bound of ``|h_t|``: 1 (the LSTM: ``o tanh(c)``), or
    with ``CARRIES_H0`` ``max(1, |h0|)`` (the GRU: ``h_t = (1 - z) n + z h_{t-1}``, ``|n| < 1``).
    Scalars: one per batch row, broadcast over the product's columns every step, took 20 registers
    a thread and spilled at 16-64 batch rows (sm_90, Triton 3.6). h0's rows are read in chunks of
    32 KB (64 at 64 rows), as :func:`_half_weights` reads the weights."""
    m = tl.zeros([], dtype=tl.float32)
    if HAS_H0:
        CHUNK: tl.constexpr = _start_chunk(rows.shape[0], rows.shape[0] >= 64, K_PAD)
        for k0 in range(0, H, CHUNK):
            hk = _load_gate_padded(h0_ptr, H, rows, row_mask, k0, H, 1, K_PAD, CHUNK).to(tl.float32)
            m = tl.maximum(m, tl.max(tl.max(tl.abs(hk), axis=1), axis=0))
    s0, inv0 = _pow2_above(m, HALF_SHIFT)
    if CARRIES_H0:
        s, inv = _pow2_above(tl.maximum(m, 1.0), HALF_SHIFT)
    else:
        s, inv = _pow2_above(tl.full([], 1.0, tl.float32), HALF_SHIFT)
    return s0, inv0, s, inv


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
def _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS: tl.constexpr):
    """The lengths of this program's batch rows (``[BLOCK_B]`` int32, from ``lengths [B]``) for a
    variable-length batch; without ``HAS_LENGTHS`` a stand-in that no step reads."""
    if HAS_LENGTHS:
        lengths = tl.load(lengths_ptr + rows, mask=row_mask, other=0)
    else:
        lengths = 0
    return lengths


@triton.jit
def _where_running(t, lengths, running, finished, HAS_LENGTHS: tl.constexpr):
    """Per batch row (column of a ``[BLOCK_H, BLOCK_B]`` tile): ``running`` where step ``t`` is
    inside the row's sequence (``t < lengths[row]``), ``finished`` past its end. A finished row
    keeps its state and passes its gradients through unchanged, as a sequence run alone would
    (``rnnbench.reference.reference_forward``). Without ``HAS_LENGTHS``, ``running`` as it is: the
    compiled step is the one without lengths."""
    if HAS_LENGTHS:
        running = tl.where((t < lengths)[None, :], running, finished)
    return running


@triton.jit
def _dropped(x, drop, DROP: tl.constexpr):
    """Recurrent dropout (variational: Gal and Ghahramani, 2016; Keras' ``recurrent_dropout``):
    ``x * drop`` where ``DROP``, else ``x`` as it is (the compiled step without it). ``drop`` is
    the tile of the layer's mask ``[B, H]`` (0 or ``1 / (1 - p)``), the same at every step.
    Forward, ``x`` is ``h_t`` as the next step's recurrent product reads it; backward, that
    product's gradient on its way to ``h_{t-1}``."""
    if DROP:
        x = x * drop
    return x


@triton.jit
def _row_sums(a0, a1, a2, a3, valid, GATES: tl.constexpr, n):
    """Each batch row's (column's) sum over the first ``GATES`` of the tiles ``a0..a3``
    (``[BLOCK_H, BLOCK_B]`` each, a gate's units of the product), their ``valid`` units
    (``[BLOCK_H, 1]``) alone, ``n`` values in all, and its squared deviations from their mean
    ``sum / n``: ``(sum, squares)``, ``[BLOCK_B]`` each."""
    total = tl.sum(tl.where(valid, a0, 0.0), axis=0)
    if GATES > 1:
        total += tl.sum(tl.where(valid, a1, 0.0), axis=0)
    if GATES > 2:
        total += tl.sum(tl.where(valid, a2, 0.0), axis=0)
    if GATES > 3:
        total += tl.sum(tl.where(valid, a3, 0.0), axis=0)
    mean = (total / n)[None, :]
    d = tl.where(valid, a0 - mean, 0.0)
    squares = tl.sum(d * d, axis=0)
    if GATES > 1:
        d = tl.where(valid, a1 - mean, 0.0)
        squares += tl.sum(d * d, axis=0)
    if GATES > 2:
        d = tl.where(valid, a2 - mean, 0.0)
        squares += tl.sum(d * d, axis=0)
    if GATES > 3:
        d = tl.where(valid, a3 - mean, 0.0)
        squares += tl.sum(d * d, axis=0)
    return total, squares


@triton.jit
def _row_moments(a0, a1, a2, a3, valid, GATES: tl.constexpr, N: tl.constexpr):
    """Layer norm's statistics of each batch row (column) over the first ``GATES`` of the tiles
    ``a0..a3``, their ``valid`` units alone, ``N`` values in all (:func:`_row_sums`): ``(mean, 1 /
    sqrt(variance + eps))``, ``[1, BLOCK_B]`` each (the biased variance, from the deviations:
    ``rnnbench.reference.normalized``). The program must hold every unit of its rows (``ON_CHIP``):
    no other program's are summed (:func:`_publish_moments` where they are spread)."""
    total, squares = _row_sums(a0, a1, a2, a3, valid, GATES, N)
    return (total / N)[None, :], (1.0 / tl.sqrt(squares / N + _LAYER_NORM_EPS))[None, :]


@triton.jit
def _publish_moments(part_ptr, k, a0, a1, a2, a3, valid, pid_h, rows, row_mask, B, GATES: tl.constexpr,
                     H: tl.constexpr, BLOCK_H: tl.constexpr):
    """Where a batch row's units are spread over the programs of its batch block (the exchange
    plans), norm ``k``'s share of this program (``pid_h``): :func:`_row_sums` of its own units
    into ``part [K, programs, 2, B]`` fp32 at ``[k, pid_h]`` (the sum, then the squared deviations
    from this program's own mean), for :func:`_gathered_moments` after a grid barrier."""
    PROGRAMS: tl.constexpr = (H + BLOCK_H - 1) // BLOCK_H
    total, squares = _row_sums(a0, a1, a2, a3, valid, GATES, GATES * tl.minimum(BLOCK_H, H - pid_h * BLOCK_H))
    slot = part_ptr + (k * PROGRAMS + pid_h) * (2 * B)
    tl.store(slot + rows, total, mask=row_mask)
    tl.store(slot + B + rows, squares, mask=row_mask)


@triton.jit
def _gathered_moments(part_ptr, k, rows, row_mask, B, GATES: tl.constexpr, H: tl.constexpr, BLOCK_H: tl.constexpr,
                      K_PAD: tl.constexpr):
    """After the barrier that follows every program's :func:`_publish_moments` of norm ``k``: the
    statistics of this program's batch rows over all ``GATES * H`` values, as :func:`_row_moments`
    returns them. The shares are combined as Chan, Golub and LeVeque's pairwise variance does (the
    squared deviations summed, plus each share's count times its mean's squared distance from the
    row's): no sum of squares less a squared sum, which loses the variance where the mean is far
    from zero. Every share in one ``[K_PAD // BLOCK_H, BLOCK_B]`` load each of sums and deviations
    (a power of 2 at least the programs; unrolled loads a program each held them all in registers:
    compiled for sm_90 the LSTM's forward at hidden 650 spilled 2.4 KB a thread). Read through L2
    (``.cg``): other programs wrote them."""
    PROGRAMS: tl.constexpr = (H + BLOCK_H - 1) // BLOCK_H
    p = tl.arange(0, K_PAD // BLOCK_H)
    present = p < PROGRAMS
    at = part_ptr + (k * PROGRAMS + p)[:, None] * (2 * B) + rows[None, :]
    both = present[:, None] & row_mask[None, :]
    total = tl.load(at, mask=both, other=0.0, cache_modifier=".cg")
    squares = tl.load(at + B, mask=both, other=0.0, cache_modifier=".cg")
    n = tl.where(present, GATES * tl.minimum(BLOCK_H, H - p * BLOCK_H), 1).to(tl.float32)[:, None]
    mean = tl.sum(total, axis=0)[None, :] / (GATES * H)
    apart = total - n * mean  # (a share's count times its mean's distance from the row's)
    squares = tl.sum(squares + tl.where(present[:, None], apart * apart / n, 0.0), axis=0)[None, :]
    return mean, 1.0 / tl.sqrt(squares / (GATES * H) + _LAYER_NORM_EPS)


@triton.jit
def _step_moments(a0, a1, a2, a3, x0, x1, x2, x3, valid, part_ptr, counter_ptr, target, pid_h, rows, row_mask, B,
                  GATES: tl.constexpr, H: tl.constexpr, BLOCK_H: tl.constexpr, K_PAD: tl.constexpr,
                  ON_CHIP: tl.constexpr):
    """A layer-normalized step's statistics of the recurrent product (``a0..a3``) and of the
    input's (``x0..x3``) over each batch row's ``GATES * H`` values: ``(mean, rstd, x_mean,
    x_rstd)`` as :func:`_row_moments` returns them. On chip from the program's own tiles; where the
    rows are spread over programs, both shares published (norms 0 and 1 of ``part``), one grid
    barrier at ``counter_ptr`` (``target`` arrivals), then gathered (:func:`_gathered_moments`)."""
    if ON_CHIP:
        mean, rstd = _row_moments(a0, a1, a2, a3, valid, GATES, GATES * H)
        x_mean, x_rstd = _row_moments(x0, x1, x2, x3, valid, GATES, GATES * H)
    else:
        _publish_moments(part_ptr, 0, a0, a1, a2, a3, valid, pid_h, rows, row_mask, B, GATES, H, BLOCK_H)
        _publish_moments(part_ptr, 1, x0, x1, x2, x3, valid, pid_h, rows, row_mask, B, GATES, H, BLOCK_H)
        _grid_barrier(counter_ptr, target)
        mean, rstd = _gathered_moments(part_ptr, 0, rows, row_mask, B, GATES, H, BLOCK_H, K_PAD)
        x_mean, x_rstd = _gathered_moments(part_ptr, 1, rows, row_mask, B, GATES, H, BLOCK_H, K_PAD)
    return mean, rstd, x_mean, x_rstd


@triton.jit
def _cell_moments(c, valid, part_ptr, k, counter_ptr, target, pid_h, rows, row_mask, B, H: tl.constexpr,
                  BLOCK_H: tl.constexpr, K_PAD: tl.constexpr, ON_CHIP: tl.constexpr):
    """The LSTM's ``c_t`` statistics over each batch row's ``H`` units, as :func:`_step_moments`
    (norm ``k`` of ``part`` where the rows are spread over programs)."""
    if ON_CHIP:
        mean, rstd = _row_moments(c, c, c, c, valid, 1, H)
    else:
        _publish_moments(part_ptr, k, c, c, c, c, valid, pid_h, rows, row_mask, B, 1, H, BLOCK_H)
        _grid_barrier(counter_ptr, target)
        mean, rstd = _gathered_moments(part_ptr, k, rows, row_mask, B, 1, H, BLOCK_H, K_PAD)
    return mean, rstd


@triton.jit
def _normed(a, mean, rstd, gain_ptr, offsets, unit_mask):
    """The tile ``a`` normalized by its rows' :func:`_row_moments`, times the gains at ``offsets``
    (``[BLOCK_H]``, fp32 column)."""
    return (a - mean) * rstd * _load_f32(gain_ptr, offsets, unit_mask)[:, None]


@triton.jit
def _hat(a, mean, rstd, valid):
    """The tile ``a`` normalized by its rows' :func:`_row_moments` (``x̂``, before any gain), 0 at
    the padded units (``valid`` ``[BLOCK_H, 1]``), so that sums over it count the real ones alone."""
    return tl.where(valid, (a - mean) * rstd, 0.0)


@triton.jit
def _norm_back_sums(d0, d1, d2, d3, x0, x1, x2, x3, valid, GATES: tl.constexpr):
    """Each batch row's sums over the first ``GATES`` tiles' ``valid`` units of ``d`` and of ``d
    x̂``, ``[BLOCK_B]`` each: what :func:`_norm_back` takes the means of."""
    total = tl.sum(tl.where(valid, d0, 0.0), axis=0)
    dot = tl.sum(tl.where(valid, d0 * x0, 0.0), axis=0)
    if GATES > 1:
        total += tl.sum(tl.where(valid, d1, 0.0), axis=0)
        dot += tl.sum(tl.where(valid, d1 * x1, 0.0), axis=0)
    if GATES > 2:
        total += tl.sum(tl.where(valid, d2, 0.0), axis=0)
        dot += tl.sum(tl.where(valid, d2 * x2, 0.0), axis=0)
    if GATES > 3:
        total += tl.sum(tl.where(valid, d3, 0.0), axis=0)
        dot += tl.sum(tl.where(valid, d3 * x3, 0.0), axis=0)
    return total, dot


@triton.jit
def _norm_back_from(d0, d1, d2, d3, x0, x1, x2, x3, rstd, m1, m2, valid, GATES: tl.constexpr):
    """:func:`_norm_back` given the row means ``m1`` of ``d`` and ``m2`` of ``d x̂`` (``[1,
    BLOCK_B]``)."""
    d0 = tl.where(valid, rstd * (d0 - m1 - x0 * m2), 0.0)
    if GATES > 1:
        d1 = tl.where(valid, rstd * (d1 - m1 - x1 * m2), 0.0)
    if GATES > 2:
        d2 = tl.where(valid, rstd * (d2 - m1 - x2 * m2), 0.0)
    if GATES > 3:
        d3 = tl.where(valid, rstd * (d3 - m1 - x3 * m2), 0.0)
    return d0, d1, d2, d3


@triton.jit
def _norm_back(d0, d1, d2, d3, x0, x1, x2, x3, rstd, valid, GATES: tl.constexpr, N: tl.constexpr):
    """Layer norm's backward over each batch row's ``N`` values in the first ``GATES`` tiles: from
    ``d`` (the gradient reaching the normalized values ``x̂``, the gains already applied) and ``x̂``
    itself (:func:`_hat`), the gradient reaching the values before the norm,
    ``rstd * (d - mean(d) - x̂ mean(d x̂))`` (``rnnbench.reference.normalized``'s derivative), as
    ``GATES`` tiles, 0 at the padded units (the rest returned as they came). The program holds
    every unit of its rows (:func:`_shared_norm_back` where they are spread)."""
    total, dot = _norm_back_sums(d0, d1, d2, d3, x0, x1, x2, x3, valid, GATES)
    return _norm_back_from(d0, d1, d2, d3, x0, x1, x2, x3, rstd, (total / N)[None, :], (dot / N)[None, :], valid,
                           GATES)


@triton.jit
def _shared_norm_back(d0, d1, d2, d3, x0, x1, x2, x3, rstd, valid, part_ptr, k, counter_ptr, target, pid_h, rows,
                      row_mask, B, GATES: tl.constexpr, H: tl.constexpr, BLOCK_H: tl.constexpr, K_PAD: tl.constexpr,
                      ON_CHIP: tl.constexpr):
    """:func:`_norm_back` over each batch row's ``GATES * H`` values. On chip from the program's own
    tiles; where the rows are spread over programs (the exchange plans) each program's sums of
    ``d`` and ``d x̂`` go into ``part [K, programs, 2, B]`` fp32 at ``[k, pid_h]``, and after a
    grid barrier at ``counter_ptr`` (``target`` arrivals) every program's are loaded in one tile
    and summed."""
    if ON_CHIP:
        d0, d1, d2, d3 = _norm_back(d0, d1, d2, d3, x0, x1, x2, x3, rstd, valid, GATES, GATES * H)
    else:
        PROGRAMS: tl.constexpr = (H + BLOCK_H - 1) // BLOCK_H
        total, dot = _norm_back_sums(d0, d1, d2, d3, x0, x1, x2, x3, valid, GATES)
        slot = part_ptr + (k * PROGRAMS + pid_h) * (2 * B)
        tl.store(slot + rows, total, mask=row_mask)
        tl.store(slot + B + rows, dot, mask=row_mask)
        _grid_barrier(counter_ptr, target)
        p = tl.arange(0, K_PAD // BLOCK_H)
        at = part_ptr + (k * PROGRAMS + p)[:, None] * (2 * B) + rows[None, :]
        both = (p < PROGRAMS)[:, None] & row_mask[None, :]
        total = tl.sum(tl.load(at, mask=both, other=0.0, cache_modifier=".cg"), axis=0)[None, :]
        dot = tl.sum(tl.load(at + B, mask=both, other=0.0, cache_modifier=".cg"), axis=0)[None, :]
        d0, d1, d2, d3 = _norm_back_from(d0, d1, d2, d3, x0, x1, x2, x3, rstd, total / (GATES * H),
                                         dot / (GATES * H), valid, GATES)
    return d0, d1, d2, d3


@triton.jit
def _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS: tl.constexpr):
    """Backward step ``t``'s ``(d_h, d_h_cell)``: the gradient reaching h_t (from step t+1 and the
    output) and the one the cell's own gradients start from -- the same while the row runs; past
    its end zero, the output gradient ignored (that output is a constant zero) and ``d_h`` handed
    to h_{t-1} unchanged by the caller (:func:`_where_running`)."""
    d_h = d_h_rec + _where_running(t, lengths, d_out, zero, HAS_LENGTHS)
    return d_h, _where_running(t, lengths, d_h, zero, HAS_LENGTHS)


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
def _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H: tl.constexpr, BLOCK_K: tl.constexpr, S: tl.constexpr = 0):
    """Tile ``[GP * BLOCK_H, BLOCK_K]``: ``W_hh[w_rows, k0 : k0 + BLOCK_K]``, 0 where the row does
    not exist or ``k >= H``; in the weights' dtype. Rows ``S`` apart (0: ``H``, as ``W_hh``'s;
    a padded copy's, :attr:`Plan.pad_rows`), whose columns ``H .. S`` hold zeros: read up to ``S``,
    so that the mask's bound is a multiple of 8 and the loads stay 16 bytes wide (bounded at 650,
    Triton 3.6 issued them 8 bytes wide)."""
    ROW: tl.constexpr = S if S > 0 else H
    k = k0 + tl.arange(0, BLOCK_K)
    return tl.load(w_ptr + w_rows[:, None] * ROW + k[None, :], mask=w_valid[:, None] & (k < ROW)[None, :], other=0.0)


@triton.jit
def _resident_stack(w_ptr, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                    S: tl.constexpr = 0):
    """The resident stacked tile as a tuple of ``CHUNKS`` pieces ``[GP * BLOCK_H, BLOCK_K]``
    (columns ``i * BLOCK_K ..``): hidden 768 is three pieces of 256, not one of 1024, and no piece
    needs more than a few dozen registers per thread on its way into shared memory. Rows ``S``
    apart (:func:`_load_stacked_weights`)."""
    pieces = ()
    for i in tl.static_range(CHUNKS):
        pieces = pieces + (_load_stacked_weights(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K, S),)
    return pieces


@triton.jit
def _stacked_matmul(pieces, w_ptr, w_rows, w_valid, h_ptr, rows, row_live, acc,
                    H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, S: tl.constexpr = 0):
    """Forward: ``acc + W_stack @ h^T``, ``[GP * BLOCK_H, BLOCK_B]`` fp32, where h is the ``[B, H]``
    plane at ``h_ptr`` (rows not ``row_live`` read as 0). ``pieces`` is the resident stacked tile
    (:func:`_resident_stack`, kept in shared memory by the compiler); otherwise the weights are
    re-read from global memory (L2) in ``BLOCK_K`` chunks. Either way the reduction stops at the
    chunk holding unit H - 1, not at K_PAD: no chunk of padding. The rows of h, and of the
    streamed weights, ``S`` apart (0: ``H``; :attr:`Plan.pad_rows`' own buffers, read up to ``S``:
    their padding holds zeros)."""
    ROW: tl.constexpr = S if S > 0 else H
    if W_RESIDENT:
        for i in tl.static_range(CHUNKS):
            h = _load_gate_padded(h_ptr, ROW, rows, row_live, i * BLOCK_K, ROW, 1, K_PAD, BLOCK_K)
            acc = _mma(pieces[i], tl.trans(h), acc, PRECISION, UPCAST)
    else:
        for k0 in range(0, H, BLOCK_K):
            h = _load_gate_padded(h_ptr, ROW, rows, row_live, k0, ROW, 1, K_PAD, BLOCK_K)
            wk = _load_stacked_weights(w_ptr, w_rows, w_valid, k0, H, BLOCK_K, S)
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
def _half_split_matmul(w_hi_ptr, w_lo_ptr, w_rows, w_valid, h_ptr, plane_h, rows, row_live, acc,
                       H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr):
    """:func:`_stacked_matmul` in 3xFP16 (:attr:`Plan.split_fp16`), the weights streamed: their
    fp16 high parts at ``w_hi_ptr``, remainders at ``w_lo_ptr``, h's at ``h_ptr`` and one
    ``plane_h`` further (:func:`_split_half`, each under its power of two, which the caller
    multiplies back). ``W_hi h_hi`` in ``acc``, the two small products in an accumulator of their
    own, scaled back by 2^-11 after the last chunk (as :func:`_mma_split` keeps 3xTF32's). fp16
    products are exact in fp32, so the interpreter widens them (``UPCAST``). Half the bytes of
    3xTF32's split operands, and K 16 a wgmma where TF32 takes 8: on the H100 a step at batch 128,
    hidden 1024 took 8.4 against 17.0 µs (``results/h100/x3-anatomy``)."""
    small = tl.zeros(acc.shape, dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        h_hi = _load_gate_padded(h_ptr, H, rows, row_live, k0, H, 1, K_PAD, BLOCK_K)
        h_lo = _load_gate_padded(h_ptr + plane_h, H, rows, row_live, k0, H, 1, K_PAD, BLOCK_K)
        w_hi = _load_stacked_weights(w_hi_ptr, w_rows, w_valid, k0, H, BLOCK_K)
        w_lo = _load_stacked_weights(w_lo_ptr, w_rows, w_valid, k0, H, BLOCK_K)
        small = _mma(w_lo, tl.trans(h_hi), small, "ieee", _INTERPRET)
        small = _mma(w_hi, tl.trans(h_lo), small, "ieee", _INTERPRET)
        acc = _mma(w_hi, tl.trans(h_hi), acc, "ieee", _INTERPRET)
    return acc + small * (1.0 / HALF_LO_SCALE)


@triton.jit
def _forward_weights(w_ptr, w_split_ptr, w_plane, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr,
                     CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, SPLIT_ONCE: tl.constexpr, K_PAD: tl.constexpr,
                     BLOCK_B: tl.constexpr, S: tl.constexpr):
    """A forward kernel's weights before its time loop: ``(pieces, w_src, w_scale)``, the resident
    stacked tile (:func:`_resident_stack`; 0 when streamed), where a streamed step reads them
    (``W_hh``) and what the step's product is multiplied by, row by row (1 but at levels 3 and 4).
    ``SPLIT_ONCE`` (the kernels' constexpr: 0, 1 for :attr:`Plan.split_once`, 2 with
    :attr:`Plan.split_w_once` too, 3 for :attr:`Plan.half_operands`, 4 for :attr:`Plan.split_fp16`):
    resident pieces are split (:func:`_split_tf32`: ``CHUNKS`` high parts, then ``CHUNKS``
    remainders); at 2, streamed, the program writes the split of its own rows of ``W_hh`` to
    ``w_split_ptr`` (high parts, then
    remainders ``w_plane`` further: ``[2, G*H, H]`` fp32) and streams from there. No other program
    reads those rows (programs of other batch blocks with the same units write the same bits), so
    a barrier of this program's threads suffices. At 3 each row is divided by its power of two
    (:func:`_half_weights`, ``w_scale``) and rounded to fp16 into the program's own rows of an
    fp16 copy at ``w_split_ptr`` (``[G*H, S]``: rows ``S`` apart, ``H`` but with
    :attr:`Plan.pad_rows`), written as at 2, which the resident pieces are read from, or the steps
    stream; at 4 the same, split (:func:`_split_half`: ``[2, G*H, H]`` fp16, remainders ``w_plane``
    further), streamed."""
    w_src = w_ptr
    w_scale = 1.0
    if SPLIT_ONCE == 5:  # (16-bit weights in a padded copy of their own: Plan.pad_rows)
        _copy_rows(w_ptr, w_split_ptr, w_rows, w_valid, H, K_PAD, BLOCK_B, S)
        w_src = w_split_ptr
        tl.debug_barrier()
        pieces = _resident_stack(w_split_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS, S) if W_RESIDENT else 0
    elif SPLIT_ONCE >= 3:
        w_scale = _half_weights(w_ptr, w_split_ptr, w_rows, w_valid, H, K_PAD, BLOCK_B, S, w_plane, SPLIT_ONCE == 4)
        w_src = w_split_ptr
        tl.debug_barrier()
        # (Resident pieces read back from the copy, as 16-bit weights are: converted in registers
        # they stayed there, 255 registers a thread and 504 bytes spilled at hidden 1024, sm_90.)
        pieces = _resident_stack(w_split_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS, S) if W_RESIDENT else 0
    elif SPLIT_ONCE:
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
    return pieces, w_src, w_scale


@triton.jit
def _split_h0(h, h0_ptr, h_split_ptr, plane_h, hid, rows, row_mask, mask, counter_ptr, H: tl.constexpr,
              K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, HAS_H0: tl.constexpr, SPLIT_ONCE: tl.constexpr,
              CARRIES_H0: tl.constexpr = False):
    """Before the first step of a forward that splits h once (:attr:`Plan.split_once`) or rounds
    it to fp16 (:attr:`Plan.half_operands`, ``SPLIT_ONCE`` 3): this program's tile of h0 (fp32
    ``h``) split, or divided by its rows' scales (:func:`_half_h_scales`, ``CARRIES_H0`` the GRU)
    and rounded (at 4, :attr:`Plan.split_fp16`, then split: :func:`_split_half`; at 5, 16-bit
    weights' padded planes, :attr:`Plan.pad_rows`, as it is in their dtype), into slot 0 of
    the exchange buffer (``plane_h``, ``hid`` and ``mask``: its plane's size and the tile's offsets
    and mask in it, rows ``S`` apart with :attr:`Plan.pad_rows`: :func:`_exchange_offsets`), then a
    grid barrier so that every program's is there. Returns ``(passed, h_scales, h_inv)``: the
    barriers passed (0 or 1), which every later wait's target counts, the scales of step 0's and of
    later steps' products, and the inverse of the later (3, 4; else 1)."""
    passed = 0
    h_scales = (1.0, 1.0)
    h_inv = 1.0
    if SPLIT_ONCE == 5:  # (16-bit h in padded planes of its own: as it is, no scale)
        if HAS_H0:
            tl.store(h_split_ptr + hid, h.to(h_split_ptr.dtype.element_ty), mask=mask)
            _grid_barrier(counter_ptr, tl.num_programs(0))
            passed = 1
    elif SPLIT_ONCE >= 3:
        s0, inv0, s, h_inv = _half_h_scales(h0_ptr, rows, row_mask, H, K_PAD, HAS_H0, CARRIES_H0)
        h_scales = (s0, s)
        if HAS_H0:
            _store_half(h_split_ptr, plane_h, hid, h * inv0, mask, SPLIT_ONCE == 4)
            _grid_barrier(counter_ptr, tl.num_programs(0))
            passed = 1
    elif SPLIT_ONCE and HAS_H0:
        _store_split(h_split_ptr, plane_h, hid, h, mask)
        _grid_barrier(counter_ptr, tl.num_programs(0))
        passed = 1
    return passed, h_scales, h_inv


@triton.jit
def _exchange_offsets(B, plane_h, hid, mask, rows, row_mask, units, H: tl.constexpr, S: tl.constexpr):
    """``(plane, offsets, mask)`` of the program's tile in a ``[B, S]`` plane of the kernel's own,
    h's fp16 exchange planes (``SPLIT_ONCE`` 3) or the split-K backward's partials: rows ``S``
    apart (:attr:`Plan.pad_rows`), the mask reaching unit ``S - 1`` (the padding is written too,
    as zeros, and read: :func:`_stacked_matmul`, :func:`_split_k_sum`), or those of a ``[B, H]``
    plane (``plane_h``, ``hid``, ``mask``) where ``S`` is ``H``."""
    plane = plane_h
    offsets = hid
    mask_s = mask
    if S != H:
        plane = B.to(tl.int64) * S
        offsets = rows[None, :] * S + units[:, None]
        mask_s = (units < S)[:, None] & row_mask[None, :]
    return plane, offsets, mask_s


@triton.jit
def _publish_h(h, h_buf_ptr, h_split_ptr, t, T, plane_h, hid, mask, counter_ptr, ON_CHIP: tl.constexpr,
               SPLIT_ONCE: tl.constexpr, h_inv, plane_s, hid_s, mask_s, PADDED: tl.constexpr = False):
    """Step ``t``'s end: store ``h_t`` (fp32 ``[BLOCK_H, BLOCK_B]``) as the output ``h_buf[t+1]``
    and where step ``t + 1`` reads it, then (exchange plans, not the last step) arrive at the
    barrier. With ``SPLIT_ONCE`` the next step reads it split (:func:`_store_split`) from slot
    ``(t + 1) % 2`` of the exchange buffer ``[2, 2, B, H]`` (two slots suffice: a program writes
    slot ``s`` again only after every program has arrived once more, so has read it), or at level
    3 times ``h_inv`` (:func:`_split_h0`) in fp16 (at 5 as it is, in the weights' dtype) from slot ``(t + 1) % 2`` of
    ``[2, B, S]`` (``plane_s``, ``hid_s`` and ``mask_s``: rows ``S`` apart, ``H`` but with
    :attr:`Plan.pad_rows`, ``PADDED``, where units ``H .. S`` are stored as zeros;
    at 4 split, :func:`_split_half`: ``[2, 2, B, H]`` fp16); the output, which no program reads, is
    stored after the arrival."""
    out = h_buf_ptr + (t + 1) * plane_h + hid
    if SPLIT_ONCE == 4:
        _store_half(h_split_ptr + ((t + 1) % 2) * (2 * plane_h), plane_h, hid, h * h_inv, mask, True)
    elif SPLIT_ONCE == 3 or SPLIT_ONCE == 5:
        h_s = h * h_inv
        if PADDED:
            h_s = tl.where(mask, h_s, 0.0)
        tl.store(h_split_ptr + ((t + 1) % 2) * plane_s + hid_s, h_s.to(h_split_ptr.dtype.element_ty), mask=mask_s)
    elif SPLIT_ONCE:
        _store_split(h_split_ptr + ((t + 1) % 2) * (2 * plane_h), plane_h, hid, h, mask)
    else:
        tl.store(out, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP and t + 1 < T:
        _arrive(counter_ptr)
    if SPLIT_ONCE:
        tl.store(out, h.to(h_buf_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _recurrent_matmul(pieces, h, w_ptr, w_rows, w_valid, h_buf_ptr, h0_ptr, h_split_ptr, w_plane, t, plane_h, rows,
                      row_mask, acc, H: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                      W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, HAS_H0: tl.constexpr,
                      PRECISION: tl.constexpr, UPCAST: tl.constexpr, SPLIT_ONCE: tl.constexpr, w_scale, h_scales,
                      plane_s, S: tl.constexpr):
    """Forward step ``t``'s ``acc + W_stack @ h_{t-1}^T``. On chip (one program holds every unit
    of its batch rows, ``BLOCK_H == K_PAD``), ``h`` itself (fp32 ``[K_PAD, BLOCK_B]``, rounded to
    the weights' dtype as the exchange buffer would hold it) is the operand; otherwise every
    program's ``h_{t-1}`` is read back from the exchange buffer (:func:`_previous_h`), or with
    ``SPLIT_ONCE`` from slot ``t % 2`` of the split one (:func:`_publish_h`; h0's is slot 0),
    the weights from ``w_ptr`` (their high parts) and ``w_ptr + w_plane`` (:func:`_forward_weights`);
    at level 3 (:attr:`Plan.half_operands`) fp16 products of the weights' fp16 rows and h's from
    slot ``t % 2`` of its fp16 exchange buffer (planes ``plane_s`` apart, rows ``S``:
    :attr:`Plan.pad_rows`), multiplied by the rows' ``w_scale`` and h's scale after (exact: powers
    of two; ``h_scales`` step 0's and the later steps', :func:`_split_h0`); at 4
    (:attr:`Plan.split_fp16`) the same with 3xFP16's split operands (:func:`_half_split_matmul`)."""
    if ON_CHIP:
        acc = _mma(pieces[0], h.to(pieces[0].dtype), acc, PRECISION, UPCAST)
    elif SPLIT_ONCE:
        live = row_mask
        if not HAS_H0:
            if t == 0:  # no h0: no row is read, the recurrent term is zero
                live = rows < 0
        if SPLIT_ONCE == 4:
            acc = _half_split_matmul(w_ptr, w_ptr + w_plane, w_rows, w_valid, h_split_ptr + (t % 2) * (2 * plane_h),
                                     plane_h, rows, live, acc, H, K_PAD, BLOCK_K)
        elif SPLIT_ONCE == 3:
            # (fp16 x fp16 products are exact in fp32: the interpreter widens them, as UPCAST does bf16)
            acc = _stacked_matmul(pieces, w_ptr, w_rows, w_valid, h_split_ptr + (t % 2) * plane_s, rows, live, acc,
                                  H, K_PAD, BLOCK_K, CHUNKS, W_RESIDENT, "ieee", _INTERPRET, S)
        elif SPLIT_ONCE == 5:
            acc = _stacked_matmul(pieces, w_ptr, w_rows, w_valid, h_split_ptr + (t % 2) * plane_s, rows, live, acc,
                                  H, K_PAD, BLOCK_K, CHUNKS, W_RESIDENT, PRECISION, UPCAST, S)
        else:
            acc = _split_stacked_matmul(pieces, w_ptr, w_ptr + w_plane, w_rows, w_valid,
                                        h_split_ptr + (t % 2) * (2 * plane_h), plane_h, rows, live, acc, H, K_PAD,
                                        BLOCK_K, CHUNKS, W_RESIDENT, SPLIT_ONCE == 2)
        if SPLIT_ONCE == 3 or SPLIT_ONCE == 4:  # (the operands' powers of two, multiplied back: exact)
            acc = acc * w_scale[:, None] * tl.where(t == 0, h_scales[0], h_scales[1])
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
                     PRECISION: tl.constexpr, UPCAST: tl.constexpr, S: tl.constexpr):
    """Split-K backward: this program's share of every unit's ``dh_{t-1}``, ``W_stack^T @ grads``
    (``grads`` the stacked gate gradients of its own units ``[GP * BLOCK_H, BLOCK_B]``, in the
    weights' dtype), accumulated in fp32 and written in the plane's dtype (fp32, or 16 bits:
    ``Plan.half_partials``) to the ``[B, S]`` plane at ``part_ptr`` ``BLOCK_K`` units at a time:
    rows ``S`` apart, ``H`` or padded (:attr:`Plan.pad_rows`), units ``H .. S`` written as the
    zeros they are (``W_stack^T``'s rows past ``H`` read as 0), which :func:`_sum_partials` reads.
    ``pieces``: the resident ``W_stack^T`` pieces ``[BLOCK_K, GP * BLOCK_H]``; otherwise re-read
    from L2 each step."""
    for i in tl.static_range(CHUNKS):
        if W_RESIDENT:
            wk = pieces[i]
        else:
            wk = _load_stacked_weights_t(w_ptr, w_rows, w_valid, i * BLOCK_K, H, BLOCK_K)
        k = i * BLOCK_K + tl.arange(0, BLOCK_K)
        part = _mma(wk, grads, tl.zeros([BLOCK_K, grads.shape[1]], dtype=tl.float32), PRECISION, UPCAST)
        tl.store(part_ptr + rows[None, :] * S + k[:, None], part.to(part_ptr.dtype.element_ty),
                 mask=(k < S)[:, None] & row_mask[None, :])  # (the pieces reach S: BLOCK_K >= 8)


@triton.jit
def _split_k_arrive(pieces, w_ptr, w_rows, w_valid, grads, partials_ptr, s, programs: tl.constexpr, counter_ptr,
                    plane_p, rows, row_mask, H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
                    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, S: tl.constexpr):
    """Reverse step ``s`` of a split-K backward, first half: this program's partials of every
    unit's ``dh_{t-1}`` from its stacked gate gradients ``grads`` (:func:`_partials_matmul`) into
    slot ``s % 2`` of ``partials [2, programs, B, S]`` (``plane_p`` a ``[B, S]`` plane; ``S`` as
    :func:`_exchange_offsets` gives it), then its arrival at the step's barrier
    (:func:`_arrive`); :func:`_split_k_sum` is the second half. Two slots by step parity: a program
    writes step s+1's partials only after the barrier of step s, which every program reaches only
    after summing step s-1's, so nothing still being read is overwritten."""
    slot = partials_ptr + (s % 2) * programs * plane_p
    _partials_matmul(pieces, w_ptr, w_rows, w_valid, grads, slot + tl.program_id(0) * plane_p, rows, row_mask, H,
                     BLOCK_K, CHUNKS, W_RESIDENT, PRECISION, UPCAST, S)
    _arrive(counter_ptr)


@triton.jit
def _split_k_sum(partials_ptr, s, programs: tl.constexpr, counter_ptr, plane_p, hid_p, mask_p):
    """Reverse step ``s`` of a split-K backward, second half (after :func:`_split_k_arrive`): wait
    for every program's partials of the step (:func:`_wait`), then sum this program's units'
    slices (:func:`_sum_partials`; ``plane_p``, ``hid_p`` and ``mask_p`` the partials' plane,
    offsets and mask from :func:`_exchange_offsets`): the part of ``dh_{t-1}`` that passes through
    ``W_hh``. With padded rows the mask reaches unit ``S - 1``, whose partials are zeros: the
    loads' bound a multiple of 8 keeps them 16 bytes wide."""
    _wait(counter_ptr, programs * (s + 1))
    return _sum_partials(partials_ptr + (s % 2) * programs * plane_p, programs, plane_p, hid_p, mask_p)


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
def _release_counters(counters_ptr, GROUP: tl.constexpr = 0):
    """Leave the barrier counters of this batch block at zero for the next launch, so they can be
    allocated once and reused without a memset per call. ``counters_ptr`` holds arrivals
    ``[0, NB)`` and exits ``[NB, 2 NB)`` (NB = batch blocks), then with ``GROUP`` (programs a group,
    :func:`_gate_split_columns`) each batch block's group counters (:func:`_group_counter`). Each
    program counts itself out after its last wait; the last one out zeroes them, when no program
    of the block can still be waiting."""
    pid_b = tl.program_id(1)
    arrivals = counters_ptr + pid_b
    exits = counters_ptr + tl.num_programs(1) + pid_b
    if tl.atomic_add(exits, 1, sem="acq_rel", scope="gpu") == tl.num_programs(0) - 1:
        tl.atomic_xchg(arrivals, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(exits, 0, sem="relaxed", scope="gpu")
        if GROUP:
            groups = tl.num_programs(0) // GROUP
            for j in range(0, groups):
                tl.atomic_xchg(_group_counter(counters_ptr, j, groups), 0, sem="relaxed", scope="gpu")


@triton.jit
def _group_counter(counters_ptr, group, groups):
    """The arrival counter of this batch block's group ``group`` of :attr:`Plan.gate_split`'s
    programs (``groups`` a batch block), after the arrivals and exits of :func:`_release_counters`."""
    return counters_ptr + 2 * tl.num_programs(1) + tl.program_id(1) * groups + group


@triton.jit
def _transpose_columns(acc, w, w_t_ptr, units, unit_mask, g_ptr, rows, row_mask, partials_ptr, counters_ptr, s,
                       plane_h, hid, mask, H: tl.constexpr, GATES: tl.constexpr, GATE_GROUP: tl.constexpr,
                       BLOCK_H: tl.constexpr, SPAN_PAD: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr,
                       W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                       STEP_BARRIERS: tl.constexpr = 1):
    """The LSTM's and GRU's transpose backward past step ``s``'s grid barrier (its last of
    ``STEP_BARRIERS`` a step): ``acc + (d_gates @ W_hh[:, units])^T`` for this program's units from
    every program's gate gradients (the ``[B, GATES * H]`` plane at ``g_ptr``), each gate's partial
    apart in groups of ``GATE_GROUP`` programs (:func:`_gate_split_columns`, :attr:`Plan.gate_split`)
    or every gate in one product (:func:`_columns_matmul`)."""
    _wait(counters_ptr + tl.program_id(1), tl.num_programs(0) * (s + 1) * STEP_BARRIERS)
    if GATE_GROUP:
        acc = _gate_split_columns(acc, w_t_ptr, g_ptr, rows, row_mask, partials_ptr, counters_ptr, s, plane_h, hid,
                                  mask, H, GATES, GATE_GROUP, BLOCK_H, SPAN_PAD, K_PAD, BLOCK_K, PRECISION, UPCAST)
    else:
        acc = _columns_matmul(w, w_t_ptr, units, unit_mask, g_ptr, rows, row_mask, acc, H, GATES, 4, K_PAD, BLOCK_K,
                              W_RESIDENT, PRECISION, UPCAST)
    return acc


@triton.jit
def _gate_split_columns(acc, w_t_ptr, g_ptr, rows, row_mask, partials_ptr, counters_ptr, s, plane_h, hid, mask,
                        H: tl.constexpr, GATES: tl.constexpr, GROUP: tl.constexpr, BLOCK_H: tl.constexpr,
                        SPAN_PAD: tl.constexpr, K_PAD: tl.constexpr, BLOCK_K: tl.constexpr,
                        PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """Backward, :attr:`Plan.gate_split`: ``acc + (d_gates @ W_hh[:, units])^T`` for this program's
    units, ``[BLOCK_H, BLOCK_B]`` fp32, as :func:`_columns_matmul` gives it, computed by a group of
    ``GROUP`` consecutive programs (``GATES`` on CUDA, each multiplying one gate; one program alone
    under the interpreter, every gate) that share the group's ``GROUP * BLOCK_H`` units
    (``SPAN_PAD`` that, to a power of 2). Each program multiplies ``GATES // GROUP`` gates' gradients
    of every unit (the ``[B, GATES * H]`` plane at ``g_ptr``, one gate's ``H`` columns) by those
    gates' rows of ``W_hh`` for the group's units (``W_hh^T`` at ``w_t_ptr``), and stores the
    partial in ``partials [2, GATES, B, H]`` (fp32, slot ``s % 2``); after the group's own barrier
    each program sums its units' partials of every gate. Why: the transpose plan's programs each
    read every gate's gradients (``GATES * H`` wide) for 16 units a step; here each reads one
    gate's for ``GATES * 16`` units, a quarter of the bytes from L2 for the LSTM. Two step parities
    suffice: a program writes slot ``s % 2`` again only after every program has passed step ``s +
    1``'s grid barrier, so after its group read step ``s``'s partials."""
    ROLES: tl.constexpr = GATES // GROUP
    SPAN: tl.constexpr = GROUP * BLOCK_H
    pid_h = tl.program_id(0)
    group = pid_h // GROUP
    first = (pid_h % GROUP) * ROLES  # the first gate this program multiplies
    offs = tl.arange(0, SPAN_PAD)
    units = group * SPAN + offs
    unit_ok = (offs < SPAN) & (units < H)
    slot = (s % 2) * GATES
    for r in tl.static_range(ROLES):
        gate = first + r
        part = tl.zeros((SPAN_PAD, acc.shape[1]), dtype=tl.float32)
        for i in range(0, (H + BLOCK_K - 1) // BLOCK_K):
            w = _load_gate_padded(w_t_ptr + gate * H, GATES * H, units, unit_ok, i * BLOCK_K, H, 1, K_PAD, BLOCK_K)
            d = _load_gate_padded(g_ptr + gate * H, GATES * H, rows, row_mask, i * BLOCK_K, H, 1, K_PAD, BLOCK_K)
            part = _mma(w, tl.trans(d), part, PRECISION, UPCAST)
        tl.store(partials_ptr + (slot + gate) * plane_h + rows[None, :] * H + units[:, None], part,
                 mask=unit_ok[:, None] & row_mask[None, :])
    counter = _group_counter(counters_ptr, group, tl.num_programs(0) // GROUP)
    _arrive(counter)
    _wait(counter, GROUP * (s + 1))
    for gate in tl.static_range(GATES):
        acc += tl.load(partials_ptr + (slot + gate) * plane_h + hid, mask=mask, other=0.0, cache_modifier=".cg")
    return acc
