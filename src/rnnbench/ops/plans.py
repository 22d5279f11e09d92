"""The launch plan of a recurrence: how its hidden units and batch rows are split across programs,
whether the weights stay resident, h stays on chip, the backward splits K, and the dot precision
of each dtype; with the rules measured for each choice (``docs/kernels.md``). The kernels' shared
pieces are ``ops/common.py``; ``ops/recurrence.py`` caches a plan per shape.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import torch

from .common import INTERPRET

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
# The LSTM's and GRU's backward with each gate's partial apart (Plan.gate_split) by default where
# the split-K one is not (past SPLIT_K_MAX_HIDDEN, or SPLIT_K_16BIT_MAX_HIDDEN for 16-bit weights),
# up to GATE_SPLIT_MAX_HIDDEN, and in its place from GATE_SPLIT_MIN_HIDDEN at GATE_SPLIT_ROWS batch
# rows a program or more. Backward kernel alone on the H100 (benchmarks/plan_sweep.py --cases
# gate_split, gate_split_rule; results/h100/gate-split), µs a step, default -> gate split: TF32 at
# hidden 1024 (transpose before) LSTM 25.7 -> 14.1 at batch 128, 17.8 -> 12.4 at 64, 14.4 -> 10.6
# at 32, GRU 20.8 -> 12.7, 16.0 -> 10.4, 11.6 -> 8.7; strict fp32 (3xTF32) at 1024 LSTM 54.1 ->
# 40.0 (batch 128), 37.7 -> 18.9 (32), GRU 41.7 -> 38.4, 29.1 -> 19.3; against split-K at 64 rows
# (batch 128): TF32 at 768 LSTM 20.3 -> 11.3, GRU 21.2 -> 10.8; bf16 at 768 10.0 -> 8.4 and 10.0 ->
# 7.7, fp16 at 1024 13.9 -> 9.9 and 13.7 -> 9.0. Split-K stays faster at 16-32 rows (bf16 and fp16
# at 1024, batch 32: 5.0 against 7.0 and 4.9 against 6.1; FlashRNN's 3.7 against 4.8; TF32 at 768,
# batch 32: 6.1 against 7.8) and at hidden 512 (TF32, batch 32-128: 4.5-6.5 against 5.6-8.1).
# Past 1024 on the H200 (plan_sweep.py --cases lm_backward, gate_split_wide; results/h200/gate-split-wide)
# the gate split took 0.42-0.85x the transpose plan's step in all 42 shapes measured, hidden 1280, 1500
# and 2048 at batch 20, 64 and 128, bf16 and TF32, strict fp32 at 1500: zaremba-large's LSTM at 1500,
# batch 20, 21.16 -> 12.47 µs (bf16) and 29.73 -> 17.65 (TF32). Past 2048 (--cases gate_split_wider,
# wider-91dd18e) at 32 units a program (batch 20 and 64) 0.47-0.86x in all 14 shapes, hidden 2560,
# 3072 and 4096, bf16 and TF32 (the GRU at 4096); through the engine (wider-66b79ff, both verified)
# training 1.07-1.18x as fast in 16 bits and TF32 and 2.01x in strict fp32 (LSTM at 3072, batch 20).
# At 64 units (batch 128) 0.88-1.00x in 16 bits, but in TF32 the engine's training 0.94-0.96x as
# fast as the transpose plan with its chunks narrowed (_chunks_fit; the gate split's narrow to
# 32 there): so past GATE_SPLIT_MAX_HIDDEN up to GATE_SPLIT_WIDE_MAX_HIDDEN only at
# GATE_SPLIT_WIDE_MAX_UNITS units a program or fewer. Past 4096 (not measured) the transpose plan.
GATE_SPLIT_MIN_HIDDEN, GATE_SPLIT_MAX_HIDDEN, GATE_SPLIT_ROWS = 768, 2048, 64
GATE_SPLIT_WIDE_MAX_HIDDEN, GATE_SPLIT_WIDE_MAX_UNITS = 4096, 32
# From this hidden size where it is a multiple of 8 (split-K's padded partials beat the gate split's
# unaligned reads at 650 in bf16, 1.20-1.25x): at 64 rows on the H200 the gate split took 0.70-0.82x
# split-K's step in TF32 and 0.80-0.93x in bf16 at hidden 576, 640 and 704, batch 128
# (results/h200/gate-split-wide/narrow-c3a5a89); split-K stays faster at 512 (above).
GATE_SPLIT_MIN_ALIGNED_HIDDEN = 576
# Chunks in flight at 16-32 batch rows a program: 3 (TF32 at hidden 1024, batch 32 10.6 against
# 11.4 µs a step with 4; batch 64 11.7 against 12.4); at 64 rows the tensor cores' 4, the chunks
# narrowed to fit (128 wide with 3: 14.4 against 14.1).
GATE_SPLIT_FEW_ROWS_STAGES = 3
# Strict fp32 forwards that stream their weights split h once (Plan.split_once), and from this many
# batch rows a program their weights too (Plan.split_w_once).
SPLIT_ONCE, SPLIT_W_ONCE_ROWS = True, 64
# Their chunks: 32 wide, not 64 (BLOCK_K), and six in flight with the weights' copy. At 64 wide
# 8 of 9 split-once forwards spilled under Triton 3.9 (32-200 bytes a thread), at 64 batch rows
# under 3.6 too (152-184); at 32 none does (benchmarks/aot_3xtf32.py). On the H100 (Triton 3.6) 32
# wide took 0.94-1.02x the step time of 64 at 16-32 rows, and six in flight at 64 rows 0.85-0.86x
# (plan_sweep.py --cases spills: results/h100/triton-lane-14).
SPLIT_ONCE_BLOCK_K, SPLIT_W_ONCE_STAGES = 32, 6
# Strict fp32 forwards that stream their weights (the LSTM's, GRU's, tanh RNN's) run 3xFP16 (Plan.split_fp16)
# instead of 3xTF32 from split operands: fp16 high parts and remainders, half the bytes a step.
# A stand-in of the step at batch 128, hidden 1024 on the H100 (results/h100/x3-anatomy,
# probes/anatomy.py): 8.4 µs against 17.0 (LSTM's 64-row tile) and 8.2 against 15.2 (GRU's), with
# 64-wide chunks, four in flight (32 wide, six: 9.5 and 9.2). Where 3xTF32's bytes went: without
# h's remainder plane 14.3, without the weights' 14.4, without both 11.4, one product of the high
# parts alone 8.0; fp16 remainders converted to fp32 for TF32 products were slower (23-29).
SPLIT_FP16, SPLIT_FP16_BLOCK_K, SPLIT_FP16_STAGES = True, 64, 4
# TF32 forwards of the LSTM and GRU that exchange h past the FMA forwards' widths (hidden 128; at
# 128 and below, where the FMA forwards do not run, not measured) run on fp16 operands
# (Plan.half_operands), with the 16-bit plan. Where TF32's fp32 weights would stream from L2
# every step (hidden 1024; 768 past batch 128), on the H100 (results/h100/half-operands/final-326c591,
# plan_sweep.py --cases half_operands) 0.46-0.70x the step (batch 128, hidden 1024: LSTM 8.78 -> 5.68
# µs, GRU 8.27 -> 5.13); errors against float64 the same (7.9e-4 against 8.1e-4, 4.4e-4 against 4.8e-4);
# graphed forwards 1.24-1.51x as fast through the engine (on_chip.py --compare half_operands). Where
# TF32's weights are resident too: on the H200 (results/h200/half-wide/, --cases half_operands_wide)
# 0.52-0.96x the step at every one of 36 shapes (hidden 136-768, batch 1, 32, 128; LSTM and GRU), the
# least gain at hidden 650, batch 128 (0.96x; rows of 650 are not 16-byte aligned).
HALF_OPERANDS = True
# TF32 forwards of the LSTM and GRU on FMA units hold W_hh^T as scaled fp16 (Plan.half_weights) where
# 16-bit weights split k in two (gluon_fma.k_split: the GRU from hidden 65, the LSTM from 101). On the
# H100 (results/h100/gated-fma/half-weights), graphed forwards against fp32 weights: the GRU at hidden
# 128 0.72-0.76x the time (batch 32 39.8 -> 30.4 µs), at 100 0.94x; the LSTM at 128 0.89-0.93x (50.5
# -> 44.8). The LSTM at hidden 100 (one part) took 1.05x: not there. (Not measured for the GRU at hidden
# 65-99, nor the LSTM at 101-127.)
HALF_WEIGHTS = True
# Overrides of a TF32 forward that mean its own fp32 operands (a weight path, 3xTF32's splits): given,
# the forward does not take Plan.half_operands by default (and a split asked for is refused as such).
_TF32_OPERAND_FIELDS = frozenset({"w_resident", "split_once", "split_w_once", "pieces"})
# Plan overrides that pick a tile or weight path: given without h_on_chip, they mean the exchange plan.
_EXCHANGE_FIELDS = frozenset({"block_h", "block_k", "w_resident"})


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive ints, for host code on every call's path: Triton 3.6's
    ``triton.cdiv`` is a constexpr function that unwraps its arguments on every call (ten calls an
    eager training step: the cProfile in ``results/h100/host-time/engine-885afe0``)."""
    return -(-a // b)


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
        split_fp16: with ``split_once`` and streamed weights (strict fp32's forward of the LSTM,
            the GRU and the RNN's tanh): 3xFP16 in place of 3xTF32. Each program divides every
            row of its ``W_hh`` tile by the power of two that brings its largest ``|w|`` into
            ``[2^14, 2^15)`` and splits it into an fp16 high part and a remainder times 2^11 (a
            copy of both it streams from, ``[2, G*H, H]``); h is exchanged split the same way
            (``[2, 2, B, H]``) under the scales of :attr:`half_operands` (step 0 from h0, later
            steps from a bound of ``|h_t|``: 1, or the GRU's ``max(1, |h0|)``; relu's h has none).
            Three fp16 products a chunk (``common._half_split_matmul``), each exact in fp32, the
            two small ones summed apart: fp32's accuracy, as 3xTF32 (about 2^-22 of each product),
            from half the bytes and half the tensor-core instructions.
        on_chip_split: the on-chip RNN's strict fp32 forward from operands split once instead of
            Triton's ``tf32x3`` (which splits both operands inside every product): ``"tf32"``
            (3xTF32, the weights split before the time loop) or ``"fp16"`` (3xFP16: fp16 high parts
            and remainders scaled by 2^11, under power-of-two scales of the weights and of h's
            columns; fp16 products take K 16 per wgmma where TF32 takes 8, so the step's chain is
            half as long). ``""``: neither.
        gluon: the LSTM's or GRU's forward as its Gluon kernel (``ops/lstm/gluon.py``,
            ``ops/gru/gluon.py``: the same plan, h copied straight into shared memory and one wait
            for the step's product instead of one per piece of h, the gates out of the accumulator
            once), where :func:`gluon_forward` allows it. A call with lengths runs the ``tl``
            kernel.
        input_ahead: with ``gluon``, where the programs leave half the multiprocessors idle
            (:data:`AHEAD_MAX_PROGRAMS`): a call of at least :data:`AHEAD_MIN_STEPS` steps
            captured in a CUDA graph computes its input projection in chunks on a side stream
            while the kernel runs (``ops/projection.py``, ``project_ahead``), instead of before
            it (``recurrence.projects_ahead``: why only in graphs). By default the LSTM's only
            (:data:`AHEAD_DEFAULT_GATES`); the GRU's when asked for.
        fma: the recurrence on the FMA units: one program per batch row (``block_b`` 1), every
            unit (``block_h = block_k =`` :func:`k_padded`, on chip), IEEE fp32 products; no program
            waits for another, so the programs need not all be resident. Up to :data:`FMA_MAX_K`.
            The RNN's, forward or backward (``ops/rnn/fma.py``): the whole of ``W_hh`` (backward
            ``W_hh^T``) in the program's registers (see :func:`fma_default`). The LSTM's and GRU's
            forward only (``ops/lstm/fma.py``, ``ops/gru/fma.py``, Gluon): ``W_hh^T`` partly in
            registers, the rest in shared memory (see :func:`gated_fma_fits`,
            :func:`gated_fma_default`); their backward stays on tensor cores.
        produce: with ``fma``, a forward: the input projection is computed by programs of the
            recurrence's own launch (the RNN's: ``ops/rnn/fma.py``; the LSTM's and GRU's, on tensor
            cores: ``ops/gluon_produce.py``), not by a launch of its own before it:
            one launch a forward instead of two (host time, where an eager call is bound by it),
            and the rows' programs load their weights while the projection runs. See
            :func:`produce_default` and :func:`producers`.
        gate_split: the LSTM's and GRU's transpose backward with streamed weights (0: off; else the
            cell's gates, 4 or 3): its programs in groups of that many consecutive unit blocks (the
            grid rounded up to whole groups), each program multiplying one gate's gradients of
            every unit by that gate's columns of ``W_hh`` for the group's units into a partial, the
            group summing its partials after a barrier of its own
            (``common._gate_split_columns``): a program reads one gate's gradients a step instead
            of every gate's. One program alone (the interpreter's) multiplies every gate.
        half_operands: a TF32 forward of the LSTM or GRU (float32 weights, exchange plans) whose
            products take fp16 operands: 11 significant bits, as TF32's (10 stored, 1 implied),
            at half the bytes and twice the rate. Each program divides every row of its
            ``W_hh`` tile by a power of two that brings the row's largest ``|w|`` into
            ``[2^14, 2^15)`` (so no row overflows fp16 and 28 binades of it stay normal) and
            rounds it to fp16 once, before the time loop (resident, or into a copy it streams
            from); h is exchanged as fp16 beside the fp32 output, divided by a power of two per
            program (step 0's from its batch rows' largest ``|h0|``, later steps' from a bound of
            ``|h_t|``: 1 for the LSTM, ``max(1, |h0|)`` for the GRU), and the products are
            multiplied back (exact). Everything else stays fp32 (the input terms, the cell, h_t
            itself). The plan's tiles are the 16-bit plan's (:data:`HALF_OPERANDS`), never Gluon's.
        pad_rows: with ``half_operands``: the forward's own fp16 buffers, ``W_hh``'s copy
            (``[G*H, S]``) and h's exchange planes (``[2, B, S]``), hold rows ``S`` =
            :func:`row_stride` apart, ``H`` rounded up to 8 (16 bytes of fp16), so that every row
            starts on a 16-byte boundary, which a width like 650 does not give (1,300 bytes:
            docs/kernels.md, "Rows not 16-byte aligned"), and the steps read each row to its
            padded end (zeros there), so that the loads' mask ends on a multiple of 8 and they
            stay 16 bytes wide; the caller's tensors and the outputs keep ``H``. The default
            wherever ``H`` is not a multiple of 8: on the H200 at hidden 650, batch 128, a step
            took 5.29 against 9.15 µs (LSTM), 4.90 against 8.50 (GRU); nowhere slower
            (``results/h200/pad-rows``). With ``split_k`` (the backward): its partials ``[2,
            programs, B, S]`` the same way, stored and summed to the padded end (the default
            where ``H`` is not a multiple of 8 at :data:`PAD_PARTIALS_MIN_BLOCK_B` batch rows a
            program; ``backward_pad_rows`` asks either way).
            With 16-bit weights, in a forward that exchanges h (``SPLIT_ONCE`` 5, never Gluon):
            each program copies its rows of ``W_hh`` as they are into a padded copy of the
            weights' dtype, and h is exchanged through padded planes of its own beside the output,
            both read to the padded end (the default where :func:`unaligned`:
            :func:`_pads_16bit_forward`).
        half_weights: the LSTM's and GRU's TF32 forward on FMA units (``fma``, float32 weights,
            TF32 allowed; ``ops/gluon_fma.py``, ``common.HALF_SHIFT``): ``W_hh^T``
            held on the chip as fp16, as 16-bit weights are (k in parts as theirs,
            :func:`~rnnbench.ops.gluon_fma.k_split`), each unit's row of every gate divided by the
            power of two that brings its largest ``|w|`` into ``[2^14, 2^15)`` before its rounding
            (11 significant bits, as a TF32 operand's; 28 binades above fp16's subnormals), and each
            gate's sum multiplied back (exact). h, the input terms and the products stay fp32. See
            :data:`HALF_WEIGHTS`.
        reg_weights: with ``gluon``: every piece of the program's stacked ``W_hh`` tile read once
            from shared memory into registers before the time loop, where each step's wgmma
            takes it as its left operand (64 registers a thread a piece): only h is read from
            shared memory a step. Up to :data:`REG_WEIGHTS_MAX_PIECES` pieces of h; a forward
            that saves for the backward holds them only up to :data:`REG_WEIGHTS_SAVING_MAX_PIECES`
            (:func:`reg_weights_kernel`). The default wherever allowed.
        pieces: the LSTM's and GRU's streamed exchange forward (no ``w_resident``, ``h_on_chip``,
            ``split_once``, ``half_operands`` or ``pad_rows``) with its step computed in this many
            slices of the program's units, each slice's product, gates and cell update stored
            before the next (``ops/<cell>/pieces.py``): its accumulator is ``1 / pieces`` of the
            tile's, which at large batch × hidden outgrows the registers. Of the backward: their
            streamed transpose backward (no ``split_k``) with the cell's gradients computed in
            this many slices before the barrier and the whole tile's product after it (not
            holding the next step's saved values across the product). 1: the whole tile.
        half_saved: a forward in slices (``pieces`` > 1) with 16-bit weights that saves for the
            backward stores the gate activations (the GRU's r, z, n and ``W_hn h + b_hn``) in the
            weights' dtype instead of fp32, half the bytes written a step and read back by the
            backward (the LSTM's cell states stay fp32). Stored in fp32 beside the 16-bit loads of
            ``x_proj`` and stores of h, Triton computed the gates in two register layouts and
            spilled (sm_90, Triton 3.6: 1,568 bytes a thread against 424, ``results/h200/half-saved``). See
            :func:`half_saved_default`.
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
    split_fp16: bool = False
    on_chip_split: str = ""
    gluon: bool = False
    input_ahead: bool = False
    fma: bool = False
    produce: bool = False
    gate_split: int = 0
    half_operands: bool = False
    pad_rows: bool = False
    reg_weights: bool = False
    half_weights: bool = False
    pieces: int = 1
    half_saved: bool = False

    def grid(self, batch_size: int, hidden_size: int) -> tuple[int, int]:
        """(programs over hidden units, programs over batch rows); with :attr:`gate_split`, whole
        groups of programs over hidden units (the last group's extra programs own no unit)."""
        units = cdiv(hidden_size, self.block_h)
        return whole_groups(units, self.gate_split), cdiv(batch_size, self.block_b)


def whole_groups(units: int, group: int) -> int:
    """``units`` programs rounded up to whole groups of ``group`` (:attr:`Plan.gate_split`; 0: none),
    but a lone program stays one (it multiplies every gate itself)."""
    return -(-units // group) * group if group and units > 1 else units


def resident_piece(block_b: int, element: int, hidden_size: int) -> int:
    """Width (columns) of the pieces a resident forward tile is held and h staged in: 8 KB of h
    (:data:`RESIDENT_PIECE_BYTES`), 64 to 256 columns; 256 for 16-bit weights up to
    :data:`WIDE_PIECE_ROWS` batch rows and :data:`WIDE_PIECE_MAX_HIDDEN` units."""
    if element == 2 and block_b <= WIDE_PIECE_ROWS and hidden_size <= WIDE_PIECE_MAX_HIDDEN:
        return 256
    return max(64, min(256, RESIDENT_PIECE_BYTES // (block_b * element)))


def gate_split_constexprs(plan: Plan, hidden_size: int) -> dict:
    """The transpose backward's ``GATE_GROUP`` and ``SPAN_PAD`` (0 and 0 without
    :attr:`Plan.gate_split`): the programs of a group (``gate_split``, each multiplying one gate;
    1 where one program holds every unit, multiplying every gate) and the group's units to a
    power of 2."""
    if not plan.gate_split:
        return {"GATE_GROUP": 0, "SPAN_PAD": 0}
    group = 1 if -(-hidden_size // plan.block_h) == 1 else plan.gate_split
    return {"GATE_GROUP": group, "SPAN_PAD": next_pow2(group * plan.block_h)}


# The row stride of Plan.pad_rows' buffers: a multiple of 8 values (16 bytes of fp16, 32 of fp32).
PAD_ROWS_TO = 8
# The split-K backward pads its partials by default from this many batch rows a program: on the H200
# at hidden 650, batch 128 (64 rows) a step took 0.68-0.71x its unpadded time (TF32, bf16); at 16
# rows, whose partial sums are 8 bytes a thread either way, 0.99-1.02x (hidden 100-650:
# results/h200/pad-rows/backward-29d10d6).
PAD_PARTIALS_MIN_BLOCK_B = 64


def unaligned(hidden_size: int) -> bool:
    """Whether rows of ``hidden_size`` 16-bit values miss a 16-byte boundary (``hidden_size`` not a
    multiple of :data:`PAD_ROWS_TO`): where :attr:`Plan.pad_rows` is a default."""
    return hidden_size % PAD_ROWS_TO != 0


def padded_units_covered(plan: Plan) -> bool:
    """Whether a padded forward's programs write every unit of h's padded rows: the padding ``H ..
    S`` is written (as zeros) by the program whose units straddle ``H``, so a block of units must
    be a multiple of :data:`PAD_ROWS_TO` (with 4 units a program at hidden 100, the last block ends
    at 100 and units 100-103 were never written: fp16's forward read NaN there on the H200,
    ``results/h200/pad-rows``)."""
    return plan.block_h % PAD_ROWS_TO == 0


def _pads_by_default(plan: Plan, hidden_size: int) -> bool:
    """Whether a forward that may pad its rows (16-bit weights or TF32's fp16 operands, exchanging
    h) does so by default: ``hidden_size`` :func:`unaligned`, and every padded unit written
    (:func:`padded_units_covered`)."""
    return unaligned(hidden_size) and padded_units_covered(plan)


def _exchanges_16bit_forward(plan: Plan, direction: str, element: int, num_gates: int) -> bool:
    """Whether ``plan`` is the LSTM's or GRU's forward with 16-bit weights that exchanges h (not on
    chip, FMA or Gluon): the one that may pad its own rows (``SPLIT_ONCE`` 5)."""
    return (direction == "forward" and element == 2 and num_gates in (3, 4)
            and not (plan.h_on_chip or plan.fma or plan.gluon or plan.split_k))


def _pads_16bit_forward(plan: Plan, direction: str, element: int, num_gates: int, hidden_size: int) -> bool:
    """Whether the LSTM's or GRU's forward with 16-bit weights pads its own rows by default
    (:attr:`Plan.pad_rows`): where it exchanges h (not on chip, FMA or Gluon) and ``hidden_size``
    is :func:`unaligned`. On the H200 a step took 0.58-0.59x its unpadded time at hidden 650,
    batch 128 (bf16 and fp16), 0.96-0.97x at batch 32 and 0.90-0.91x at hidden 1500, batch 20
    (``results/h200/pad-rows/16bit-dbd411d``). Not with fewer than :data:`PAD_ROWS_TO` units a
    program (:func:`padded_units_covered`)."""
    return _exchanges_16bit_forward(plan, direction, element, num_gates) and _pads_by_default(plan, hidden_size)


def row_stride(plan: Plan, hidden_size: int) -> int:
    """The kernels' ``H_STRIDE`` constexpr: the row stride of their own buffers (a fp16-operand
    forward's weights' copy and h's exchange planes, a split-K backward's partials),
    ``hidden_size`` rounded up to :data:`PAD_ROWS_TO` with :attr:`Plan.pad_rows`, else
    ``hidden_size``."""
    return -(-hidden_size // PAD_ROWS_TO) * PAD_ROWS_TO if plan.pad_rows else hidden_size


def split_once_level(plan: Plan) -> int:
    """The forward kernels' ``SPLIT_ONCE`` constexpr for ``plan``: 0 (Triton's ``tf32x3`` in every
    product, or no 3xTF32), 1 (:attr:`Plan.split_once`), 2 (and the streamed weights from a split
    copy, :attr:`Plan.split_w_once`), 3 (fp16 operands, :attr:`Plan.half_operands`), 4 (3xFP16,
    :attr:`Plan.split_fp16`), 5 (16-bit weights and h in padded copies of their own,
    :attr:`Plan.pad_rows` without half operands)."""
    if plan.half_operands:
        return 3
    if plan.pad_rows and not plan.split_k:
        return 5
    if not plan.split_once:
        return 0
    if plan.split_fp16:
        return 4
    return 2 if plan.split_w_once and not plan.w_resident else 1


ON_CHIP_SPLITS = {"": 0, "tf32": 1, "fp16": 2}


def chip_split_level(plan: Plan) -> int:
    """The RNN forward kernel's ``CHIP_SPLIT`` constexpr for ``plan``: 0, or 1 and 2 for
    :attr:`Plan.on_chip_split` ``"tf32"`` and ``"fp16"``."""
    return ON_CHIP_SPLITS[plan.on_chip_split]


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


def multiprocessors(device: torch.device) -> int:
    """The CUDA ``device``'s multiprocessors."""
    return _limits(device, None)[0]


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
            if fewer < rows and hidden_programs * cdiv(batch_size, fewer) <= slots:
                return fewer
    return rows


# The RNN on FMA units (Plan.fma) up to this padded width: a thread holds a row of W_hh (backward a
# column), K_PAD fp32 registers (128 at hidden 65-128, at 4 warps; sm_90, Triton 3.6: 72-255
# registers a thread, no spills inside the time loop; at hidden 128 either direction may spill
# 152-184 bytes before it, loading the weights: results/h100/fma-rnn/aot). A 256-wide row would not fit in a thread's 255.
FMA_MAX_K = 128
# CUDA's largest grid in y, where the batch blocks are: an FMA plan's programs are its batch rows.
MAX_GRID_Y = 65535
# Batch rows per multiprocessor up to which fp32 weights take the FMA plan by default (fma_default).
FMA_FP32_ROWS_PER_SM = 2
# Gated cells whose forward has an FMA kernel (ops/gru/fma.py, ops/lstm/fma.py; their backwards stay
# on tensor cores).
GATED_FMA_GATES = (3, 4)
# Batch rows a multiprocessor for the GRU's fp32 forward on FMA units by default (measured to 4:
# gated_fma_default).
GATED_FMA_FP32_GRU_ROWS_PER_SM = 4


def fma_warps(hidden_size: int) -> int:
    """Warps of an FMA program (:attr:`Plan.fma`): a thread per unit of the padded width, 1 to 4."""
    return max(1, min(4, k_padded(hidden_size) // 32))


def gated_fma_fits(num_gates: int, hidden_size: int, element: int, device: torch.device, smem: int) -> bool:
    """Whether the LSTM's or GRU's forward can run on FMA units (:attr:`Plan.fma`; ``ops/gluon_fma.py``,
    a Gluon kernel: CUDA and :data:`~rnnbench.ops.gluon_common.AVAILABLE` only): up to
    :data:`FMA_MAX_K` units, the part of every gate's ``W_hh^T`` not held in registers in one
    program's shared memory (``smem`` bytes, less the margin)."""
    from . import gluon_common, gluon_fma

    return (device.type == "cuda" and gluon_common.AVAILABLE and num_gates in GATED_FMA_GATES
            and k_padded(hidden_size) <= FMA_MAX_K
            and gluon_fma.shared_bytes(num_gates, hidden_size, 32 * fma_warps(hidden_size), element)
            <= smem - SHARED_MEMORY_MARGIN)


def gated_fma_default(batch_size: int, num_gates: int, dtype: torch.dtype, slots: int) -> bool:
    """Whether the LSTM's or GRU's default forward runs on FMA units where it can
    (:func:`gated_fma_fits`): in every dtype up to one batch row per multiprocessor, and the GRU's
    with fp32 weights up to :data:`GATED_FMA_FP32_GRU_ROWS_PER_SM`. On the H100, graphed forwards
    against the tensor-core plan (``on_chip.py --compare gated_fma``, results/h100/gated-fma/
    compare-575b97f): 1.20-3.05x as fast at hidden 64-128, batch 20-128, strict fp32 and TF32 (GRU
    2.53x, LSTM 1.91x at 300 steps), training 1.04-1.33x (the backward unchanged). With 16-bit
    weights (``--compare gated_fma_more``, gated-fma/more-a9b4cff): the GRU 1.28-2.54x at batch
    32-128, hidden 64-128, bf16 and fp16 (training 1.07-1.22x), the LSTM 1.01-1.30x (training
    0.99-1.07x). Past one row per multiprocessor in fp32: the GRU at 264 rows (hidden 128) 1.10x, at
    528 (hidden 100) 1.28x (training 1.05x, 1.07x); the LSTM at 264 rows 0.96x, so it stops at one."""
    rows = slots * (GATED_FMA_FP32_GRU_ROWS_PER_SM if num_gates == 3 and dtype == torch.float32 else 1)
    return batch_size <= rows



def fma_default(batch_size: int, hidden_size: int, num_gates: int, dtype: torch.dtype, slots: int | None) -> bool:
    """Whether the default plan (either direction) runs on FMA units (:attr:`Plan.fma`): the RNN up to
    :data:`FMA_MAX_K` units and one batch row per multiprocessor (``slots``), or two with fp32
    weights. On the H100 against the tensor-core on-chip plan, graphed (``benchmarks/on_chip.py
    --compare fma``, results/h100/fma-rnn/final-44dea8c): forward 1.60-2.50x and training
    1.49-1.98x the speed at hidden 64-128, batch 20-128, fp32, TF32, bf16 and fp16, tanh and relu;
    at 300 steps 4.1x and 3.9x. Past one row per multiprocessor (``past-slots-8dc45d0``), hidden
    100 fp32: batch 256 1.70x and 1.51x, 512 1.05x and 1.11x, 1024 0.77x and 0.95x; bf16 at batch
    512, hidden 128, 0.49x and 0.80x (tensor cores in bf16 gain most from more rows)."""
    rows = slots * (FMA_FP32_ROWS_PER_SM if dtype == torch.float32 else 1) if slots is not None else 0
    return num_gates == 1 and k_padded(hidden_size) <= FMA_MAX_K and batch_size <= rows


# Programs that compute the projection in a producing forward's launch (Plan.produce): at least this
# many beside the batch rows' for the plan to produce by default (fewer would leave the rows waiting
# on a product spread over too few multiprocessors).
PRODUCE_MIN_PROGRAMS = 8


def produce_default(direction: str, num_gates: int, fma: bool, hidden_size: int, batch_size: int,
                    slots: int | None, tensor_cores: bool = True) -> bool:
    """Whether the default plan computes the projection in the recurrence's launch
    (:attr:`Plan.produce`): a forward on FMA units on CUDA where at least
    :data:`PRODUCE_MIN_PROGRAMS` multiprocessors (``slots``) are left beside the batch rows'. The
    RNN's at 4 warps (hidden 65-128: the projection's own tiles take 4; at 1-2 warps its strict fp32
    tiles spilled, sm_90); the LSTM's and GRU's where the products are on tensor cores
    (``tensor_cores``: 16-bit, TF32 or 3xTF32; ``ops/gluon_produce.py`` has no IEEE fp32 tile). Eager
    forwards against the projection launched before them: the RNN's 0.91x the time on the H100
    (results/h100/produce), the LSTM's and GRU's 0.89-0.99x on the H200 at hidden 100-128, batch
    20-32, strict fp32, TF32 and bf16 (results/h200/produce-gated, median 0.93x; training 0.95x)."""
    if not (fma and direction == "forward" and slots is not None and slots - batch_size >= PRODUCE_MIN_PROGRAMS):
        return False
    return fma_warps(hidden_size) == 4 if num_gates == 1 else tensor_cores


def producers(tiles: int, batch_size: int, slots: int | None) -> int:
    """The producing programs of a launch (:attr:`Plan.produce`) whose projection has ``tiles``
    tiles: one per tile, at most the multiprocessors (``slots``; None: under the interpreter, no
    limit) beside the ``batch_size`` rows' programs, so that every program of the launch is
    resident at once (a row's program waits for the tiles; a producer waits for nothing)."""
    return tiles if slots is None else max(1, min(tiles, slots - batch_size))


# The Gluon forwards where h is more than one piece (their gain is one wait for the step's product
# instead of one per piece) and up to this width (measured to 1024; shared memory decides beyond).
# Measured for the LSTM, on an H200, kernel alone: 0.86-0.97x the tl kernel's step at hidden
# 512-1024, 1.02x at hidden 100-128, one piece (benchmarks/results/h200/gluon-step/
# against_tl-cpasync.jsonl). The GRU's kernel (the same plan and step, three gates and a zero
# block) takes the LSTM's rule: on the H100, through the engine against tl (on_chip.py --compare
# gluon), graphed forwards 0.87x the time at FlashRNN's shape, 0.89x at batch 32, hidden 1024, 1.00x
# at batch 128, hidden 512 (benchmarks/results/h100/gluon-gru).
GLUON_MIN_HIDDEN, GLUON_MAX_HIDDEN = 257, 1024


# Projecting the input ahead (Plan.input_ahead): the programs a plan may take, as a fraction of the
# multiprocessors (the rest run the chunks' products; a recurrence program waiting for a chunk no
# multiprocessor is left to compute would wait forever). Graphed forwards on the H200 with 48 and
# 64 programs of 132 took 0.96-0.98x the time, with 96 1.16x (results/h200/input-ahead: the LSTM's).
# And the steps a call needs to take it (a short recurrence leaves the chunks' products little to
# hide behind; not measured below 512).
AHEAD_MAX_PROGRAMS = 0.5
AHEAD_MIN_STEPS = 256
# The stacked gates of the cells that project ahead by default: the LSTM's. The GRU's Gluon forward
# can (``input_ahead=True``), but at FlashRNN's shape in fp16 its graphed forward took 1.02x the
# time projected ahead, its training 0.99x (H100, one run: results/h100/gluon-gru): its projection
# is 3H wide, not 4H, so less of it is hidden.
AHEAD_DEFAULT_GATES = 4


# The Gluon forwards' weights in registers (Plan.reg_weights): at most this many pieces of h (64
# registers a thread each; four spilled hundreds of bytes at hidden 1024, sm_90, Triton 3.6). On the
# H100, kernel alone (results/h100/rs-wgmma/kernel-0e85692), the step took 0.90-0.94x the time at
# hidden 300-768, batch 16-128, LSTM and GRU, fp16 and bf16, wherever the forward saves nothing;
# through the engine (engine-0e85692, verified, A B B A) FlashRNN's fp16 LSTM forward 1.09x as fast
# eagerly, 1.06x graphed, hidden 512 1.03-1.07x. A forward that saves for the backward holds one
# more tile of every gate (its saved values stored after the arrival) and spilled up to 152 bytes at
# three pieces; there the LSTM's fp16 step took 1.08x the time (its eager training at FlashRNN's
# shape 0.96x as fast), bf16's and the GRU's 0.91-0.96x: three pieces hold their weights in
# registers only where nothing is saved.
REG_WEIGHTS_MAX_PIECES = 3
REG_WEIGHTS_SAVING_MAX_PIECES = 2


def reg_weights_kernel(plan: Plan, pieces: int, save: bool) -> bool:
    """Whether a Gluon forward of ``plan`` over ``pieces`` pieces of h runs with its weights in
    registers (the kernel's ``REG_WEIGHTS``): the plan's :attr:`Plan.reg_weights`, up to
    :data:`REG_WEIGHTS_SAVING_MAX_PIECES` pieces when the call saves for the backward."""
    return plan.reg_weights and (not save or pieces <= REG_WEIGHTS_SAVING_MAX_PIECES)


def gluon_forward(num_gates: int, element: int, hidden_size: int, block_b: int, block_h: int, resident: bool,
                  on_chip: bool, num_warps: int, fast_activations: bool, device: torch.device,
                  multiprocessors: int | None, smem: int) -> bool:
    """Whether a forward plan runs the Gluon kernel (:attr:`Plan.gluon`): the LSTM or the GRU
    (``num_gates`` 4 or 3: a stacked tile of four gate blocks either way, the GRU's fourth zeros)
    with 16-bit weights, resident, 16 units and at most 32 batch rows a program at 4 warps, hidden
    from :data:`GLUON_MIN_HIDDEN` to :data:`GLUON_MAX_HIDDEN` and a multiple of 4 (h's rows are copied
    into shared memory by ``cp.async``, which moves 4 bytes at least: an odd width did not compile,
    and 8-byte rows are what the H100 ran), with ``fast_activations`` (the kernel's tanh and
    sigmoid are the MUFU's only), on a Hopper GPU (sm_90; planning for one absent,
    ``multiprocessors`` given, counts as one) with a Triton whose Gluon the kernel was written for,
    its shared memory fitting."""
    from . import gluon_common as gluon

    if not (gluon.AVAILABLE and device.type == "cuda" and num_gates in (3, 4) and element == 2 and resident
            and not on_chip and block_h == gluon.BLOCK_H and block_b <= gluon.MAX_BLOCK_B and num_warps == 4
            and fast_activations and GLUON_MIN_HIDDEN <= hidden_size <= GLUON_MAX_HIDDEN and hidden_size % 4 == 0):
        return False
    if multiprocessors is None and torch.cuda.get_device_capability(device) != (9, 0):
        return False
    return gluon.shared_bytes(block_b, hidden_size, k_padded(hidden_size)) <= smem - SHARED_MEMORY_MARGIN


def choose_plan(batch_size: int, hidden_size: int, num_gates: int, dtype: torch.dtype,
                device: torch.device, multiprocessors: int | None = None, precision: str = "ieee",
                direction: str = "forward", bounded: bool = True, **override) -> Plan:
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
    - the LSTM's and GRU's transpose backward with each gate's partial apart
      (:attr:`Plan.gate_split`, streamed weights) past split-K's range up to
      :data:`GATE_SPLIT_MAX_HIDDEN` (to :data:`GATE_SPLIT_WIDE_MAX_HIDDEN` at
      :data:`GATE_SPLIT_WIDE_MAX_UNITS` units a program or fewer), and in split-K's place from
      :data:`GATE_SPLIT_MIN_HIDDEN` (:data:`GATE_SPLIT_MIN_ALIGNED_HIDDEN` where hidden is a multiple
      of 8) at :data:`GATE_SPLIT_ROWS` batch rows a program, wherever whole groups of programs are
      resident;
    - h on chip (:attr:`Plan.h_on_chip`) instead, where :func:`on_chip_default` allows it (tensor
      cores, stacked tiles of at most :data:`ON_CHIP_MAX_ROWS` rows that fit): 16 batch rows and
      every unit per program, :func:`on_chip_warps` warps;
    - any streamed step (weights neither resident nor on chip): its chunks in flight narrowed, then
      fewer, to fit in shared memory (:func:`_chunks_fit`), and split-K that cannot fit the
      transpose plan instead;
    - the LSTM's and GRU's streamed forward whose 64-row tile is wide: :data:`WIDE_ROWS` batch rows
      and half the units a program, in slices (:func:`wide_rows_default`; TF32's on its own
      operands); else the LSTM's in slices where its accumulator would spill
      (:func:`pieces_default`), TF32's on its own operands there instead of fp16's;
    - the LSTM's and GRU's backward in slices whose 64-row tile is wide: :data:`WIDE_ROWS` batch
      rows and half the units a program (:func:`wide_rows_backward_default`).

    Under the interpreter one program owns all hidden units of its batch block, on chip unless an
    override asks for a tile or weight path (``block_h``, ``block_k``, ``w_resident``) without
    ``h_on_chip``.
    ``multiprocessors`` stands in for the CUDA device's count (to plan for a GPU not present).
    ``bounded``: whether the cell's ``|h_t|`` has a bound after step 0 (False for the RNN's relu),
    which :attr:`Plan.split_fp16`'s scales need.
    An override named ``backward_<field>`` applies to the backward plan only, as ``split_k`` does;
    one named ``forward_<field>`` to the forward plan only.

    Raises:
        ValueError: a plan whose programs cannot all be resident (more programs than
            multiprocessors on CUDA, more than one program per batch block under the interpreter),
            a block size that is not a power of 2 of its minimum, or an on-chip plan whose tile
            is not one resident piece of every unit or does not fit in shared memory, or a
            streamed plan whose asked chunks do not fit.
    """
    asked = dict(override)  # (as given: a forward on half operands is planned again, as fp16's)
    req = _request(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction, bounded,
                   override)
    fields = _tiles(req)
    fields.update(_fma_fields(req))
    fields.update(fast_activations=req.cuda and not req.backward and fast_activations(dtype, precision))
    fields.update(_split_once_fields(req, fields))
    fields.update(on_chip_split=_chip_split(req, fields), produce=produce_default(
        direction, num_gates, fields["fma"], hidden_size, batch_size, req.slots, req.tensor_cores))
    fields.update(_backward_fields(req, fields))
    fields.update(req.override)
    if "gate_split" in req.override:  # (asked for as True or the cell's gates: the cell's gates; off: 0)
        fields["gate_split"] = num_gates if req.override["gate_split"] else 0
    plan = _chunks_fit(_kernel_fields(Plan(**fields), req), req)
    if _half_operands_default(plan, req):
        return _half_operands_plan(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision,
                                   direction, asked)
    if wide_rows_default(plan, req) or wide_rows_backward_default(plan, req):
        # (the forward's slices WIDE_ROWS_PIECES; the backward's at their default)
        slices = {} if req.backward else {"pieces": WIDE_ROWS_PIECES}
        return choose_plan(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction,
                           bounded, **{**asked, **_wide_rows_fields(plan), **slices})
    if x3_pieces_default(plan, req):
        return choose_plan(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction,
                           bounded, **{**asked, "split_once": False, "pieces": X3_PIECES})
    if "pieces" not in req.override:
        plan = dataclasses.replace(plan, pieces=pieces_default(plan, req))
    if "half_saved" not in req.override:
        plan = dataclasses.replace(plan, half_saved=half_saved_default(plan, req))
    _check_plan(plan, req)
    return plan


# Fp32 accumulator values a thread that a forward step's product may hold whole (PIECES_FROM), and
# what a slice holds past it (PIECE_ACCUMULATOR). Compiled for sm_90 (Triton 3.6) the whole tile
# spilled 224-424 bytes a thread at 64 values, 0.9-1.5 KB at 128 and 2.4-3.4 KB at 256
# (results/h200/speed-map/aot-spills). Timed on the H200 (the LSTM in bf16 and fp16, kernels alone,
# results/h200/pieces/sweep-1eab503): at 256 a thread, 4 slices of 64 took 0.37-0.39x the whole
# tile's time a step (8 slices of 32: 0.58-0.59x); at 128, 4 slices 0.93-1.31x, 8 slices 1.53-2.14x;
# at 64, 2 slices 1.17-1.20x. Slices re-read h's chunks each; below 256 that costs more than the
# spills. The GRU's whole tile spills as much at 256 (2.4 KB a thread; 280 bytes in 4 slices) but
# costs less: in bf16 at batch 1024, hidden 2048 a step took 130.8 µs whole against the LSTM's 426.0,
# and 4 slices took 1.14-1.27x its time (results/h200/pieces/gru-1f9a566). So the LSTM's alone.
PIECES_FROM = 256
PIECE_ACCUMULATOR = 64
# TF32's LSTM forward on its own fp32 operands, where fp16 operands' whole tile (Plan.half_operands,
# its default) would hold PIECES_FROM values a thread: in slices of PIECE_ACCUMULATOR_TF32 (2 at 256)
# instead. Each slice reads h's chunks again, in fp32 twice the bytes of fp16's. On the H200, kernels
# alone (results/h200/pieces/tf32-304de8d), a step in 2 slices took 0.43x and 0.44x the fp16 operands'
# whole tile (batch 1024 x hidden 2048: 189.4 us against 445.0; 512 x 4096: 375.6 against 856.9), in
# 4 slices 0.57-0.58x; at 128 values (1024 x 1024) 2 slices took 1.22x, so fp16 operands stay there.
PIECE_ACCUMULATOR_TF32 = 128


# Strict fp32's LSTM and GRU forward (3xTF32) that streams its weights split once (Plan.split_once, on
# fp16 copies: Plan.split_fp16) at 64 rows a program, where that tile's accumulator holds X3_PIECES_FROM
# values a thread or more: planned again with 3xTF32 in the step (no split copies) in X3_PIECES slices.
# On the H200, kernels alone (results/h200/strict-fp32/sweep-dffae0e, plan_sweep --cases
# strict_fp32_wide), a step took 0.11-0.29x the split-once tile's at 256 values (batch 1024, hidden
# 2048: LSTM 679.5 us against 5,043.0, GRU 653.9 against 2,270.5; 512 x 4096: 1,308.9 against
# 12,440.0, 1,272.1 against 4,632.7) and 0.79x at 128 (1024 x 1024, LSTM: 210.3 against 267.5);
# 8 slices took 1.2-2.3x 4's time, the whole tile without split copies (the LSTM's 2 slices at 256)
# 1.9-3.2x. Measured at 64 rows and hidden 1024-4096 only (X3_PIECES_MIN_HIDDEN), and the GRU at 256
# values only (its split-once step at 128 took 103 us against the LSTM's 263 in one run, sweep-df327c2), by the
# cell's gates; elsewhere (batch 5000 at hidden 100, 1024 at 576-768 among them) the split-once plan stays.
X3_PIECES_FROM = {4: 128, 3: 256}
X3_PIECES = 4
X3_PIECES_MIN_HIDDEN = 1024


def x3_pieces_default(plan: Plan, req: _Request) -> bool:
    """Whether the forward ``plan`` is planned again with 3xTF32 in the step, no split copies, in
    :data:`X3_PIECES` slices, by default: on CUDA, strict fp32's (``precision="tf32x3"``) LSTM and GRU
    forward split once (:attr:`Plan.split_once`) at :data:`MAX_BLOCK_B` rows from hidden
    :data:`X3_PIECES_MIN_HIDDEN` whose accumulator (:func:`forward_accumulator`) is
    :data:`X3_PIECES_FROM` values a thread or more (by the cell's gates), none of its operand or tile
    fields asked for."""
    if (req.backward or not req.cuda or req.num_gates not in (3, 4) or req.precision != "tf32x3"
            or req.hidden_size < X3_PIECES_MIN_HIDDEN
            or not plan.split_once or plan.block_b != MAX_BLOCK_B
            or not (_TF32_OPERAND_FIELDS | {"split_fp16", "block_b", "block_h"}).isdisjoint(req.override)):
        return False
    return forward_accumulator(plan, req.num_gates) >= X3_PIECES_FROM[req.num_gates]


# The LSTM's and GRU's streamed transpose backward hold nine and eight [block_h, block_b] fp32 tiles
# across the step's product (the gradients reaching h_t, and c_t; the next step's saved values): from
# BACKWARD_PIECES_FROM values a tile a thread (288 a step for the LSTM) they run their cell gradients
# in slices of BACKWARD_PIECE_TILE a tile, and the product as one (no gate split, whose partials of a
# group's units are 4x the tile, and no split-K). Compiled for sm_90 the whole tile spilled 1.4-5.2
# KB a thread there, slices 0-696 bytes (results/h200/pieces/aot_backward.txt, docs/kernels.md "The
# backward in slices"). On the H200, kernels alone, a step took 0.20-0.70x the plan before's in
# bf16 at batch 256-1024 x hidden 1024-4096 for the LSTM (1024 x 2048: 99.1 us against 494.3),
# 0.13-0.77x for the GRU (1024 x 1024: 28.3 against split-K's 211.7), 0.25x and 0.51-0.64x in TF32
# (results/h200/pieces/backward-2eb4c0b, gru-backward-96ef09c); 2 and 4 slices within 1-5 % of each
# other but at the LSTM's 1024 x 2048 (4: 0.92x); the LSTM's gate split with slices 1.15-4.6x as long
# as without. Measured from hidden BACKWARD_PIECES_MIN_HIDDEN; narrower layers (TF32's split-K at
# batch 1024, hidden 650) and tiles under 32 (512 x 1024: 16), not measured, keep their plans. 3xTF32's
# (strict fp32) too since X3_PIECES_FROM's measurement: there the LSTM's gate split took 2.5-8.4x the
# time of 2 or 4 slices, the transpose plan whole 1.1-1.2x.
BACKWARD_PIECES_FROM = 32
BACKWARD_PIECE_TILE = 16
BACKWARD_PIECES_MIN_HIDDEN = 1024


# Batch rows a program of the LSTM's and GRU's streamed forward where its 64-row tile is wide. Every
# batch block's programs stream the same rows of W_hh from L2 each step; at 64 rows a program (16
# blocks at batch 1024) that traffic, not the arithmetic, bounds the step. WIDE_ROWS rows and half the
# units a program (the same programs) halve it; the step's product then runs in WIDE_ROWS_PIECES
# slices. On the H200, kernels alone (results/h200/pieces/rows-more-ae9b435, rows-3b9c458): in bf16 a
# step took 0.44-0.71x the 64-row default's (LSTM 1024 x 2048: 86.8 us against 158.3; 256 x 4096: 82.9
# against 188.9; 1024 x 1024: 25.3 against 35.8; GRU 1024 x 2048: 75.4 against 132.6) and TF32 on its
# own operands 0.82-0.83x (1024 x 2048: 158.1 against 189.4); 4 slices took 1.19-1.31x 2's, the GRU
# whole 1.13x. From an accumulator of WIDE_ROWS_FROM values a thread at 64 rows (16-bit weights;
# PIECES_FROM for fp32's, where TF32 leaves fp16 operands), as measured: 128 and 256 at batch 256-1024.
WIDE_ROWS = 128
WIDE_ROWS_PIECES = 2
WIDE_ROWS_FROM = 128


def wide_rows_default(plan: Plan, req: _Request) -> bool:
    """Whether the forward ``plan`` (64 rows a program) is planned again at :data:`WIDE_ROWS` rows and
    half its units a program in :data:`WIDE_ROWS_PIECES` slices, by default: on CUDA, the LSTM's and
    GRU's streamed exchange forward on its own operands (16-bit, or TF32's: not 3xTF32, fp16 operands or
    Gluon) whose accumulator (:func:`forward_accumulator`) is :data:`WIDE_ROWS_FROM` values a thread or
    more (:data:`PIECES_FROM` for fp32 weights), none of its tile fields asked for, at no more programs
    (a batch that is not a multiple of :data:`WIDE_ROWS` may need more: 320 rows take 3 blocks of 128)."""
    if (req.backward or not req.cuda or req.num_gates not in (3, 4) or not _streamed(plan) or plan.gluon
            or split_once_level(plan) or req.precision == "tf32x3" or plan.block_b != MAX_BLOCK_B
            or req.batch_size < WIDE_ROWS or not {"block_b", "block_h", "pieces"}.isdisjoint(req.override)):
        return False
    least = PIECES_FROM if req.element == 4 else WIDE_ROWS_FROM
    return forward_accumulator(plan, req.num_gates) >= least and _wide_rows_fit(plan, req)


def _wide_rows_fields(plan: Plan) -> dict:
    """The tile fields of ``plan`` (64 rows a program) at :data:`WIDE_ROWS` rows and half its units."""
    return {"block_b": WIDE_ROWS, "block_h": plan.block_h // 2}


def _wide_rows_fit(plan: Plan, req: _Request) -> bool:
    """Whether ``plan`` at :data:`WIDE_ROWS` rows (:func:`_wide_rows_fields`) needs no more programs
    than it does (a batch that is not a multiple of :data:`WIDE_ROWS` may need more)."""
    wide = dataclasses.replace(plan, **_wide_rows_fields(plan))
    programs, before = (math.prod(p.grid(req.batch_size, req.hidden_size)) for p in (wide, plan))
    return programs <= before


# And the LSTM's and GRU's sliced backward (BACKWARD_PIECES_FROM), whose transposed product re-reads
# W_hh per batch block too: where its 64-row tile holds WIDE_ROWS_BACKWARD_FROM values a thread (256
# units a program), WIDE_ROWS rows and half the units, its slices at their default (4). On the H200,
# kernels alone (results/h200/pieces/wide-rows-backward-d567cf0, wide-rows-backward-more-dfdfa55), a
# step took 0.85-0.98x the 64-row plan's in bf16 (LSTM 1024 x 2048: 92.2 us against 102.9; 512 x 4096:
# 162.5 against 186.8; GRU 512 x 4096: 124.2 against 146.0) and 0.79-0.86x in TF32; at 128 units a
# program (1024 x 1024, 32 values a thread) 1.00-1.05x, so not there.
WIDE_ROWS_BACKWARD_FROM = 64


def wide_rows_backward_default(plan: Plan, req: _Request) -> bool:
    """Whether the backward ``plan`` (64 rows a program) is planned again at :data:`WIDE_ROWS` rows and
    half its units a program, by default: on CUDA, the LSTM's and GRU's backward in slices
    (:func:`backward_sliced`, no gate split) in 16 bits or TF32 whose tile is
    :data:`WIDE_ROWS_BACKWARD_FROM` values a thread or more, none of its tile fields asked for, at no
    more programs (as :func:`wide_rows_default`)."""
    if (not req.backward or plan.gate_split or plan.block_b != MAX_BLOCK_B or req.batch_size < WIDE_ROWS
            or not (req.element == 2 or req.step_precision == "tf32")  # (as measured; not strict fp32)
            or not {"block_b", "block_h", "pieces"}.isdisjoint(req.override)
            or not backward_sliced(req.num_gates, req.hidden_size, dataclasses.asdict(plan), req.cuda)):
        return False
    return (tile_values(plan.block_h, plan.block_b, plan.num_warps) >= WIDE_ROWS_BACKWARD_FROM
            and _wide_rows_fit(plan, req))


def tile_values(block_h: int, block_b: int, num_warps: int) -> int:
    """A ``[block_h, block_b]`` fp32 tile in values a thread (``num_warps`` warps of 32 threads)."""
    return block_h * block_b // (32 * num_warps)


def backward_sliced(num_gates: int, hidden_size: int, fields: dict, cuda: bool) -> bool:
    """Whether the LSTM's or GRU's backward of these plan ``fields`` runs in slices by default
    (:data:`BACKWARD_PIECES_FROM`): on CUDA from hidden :data:`BACKWARD_PIECES_MIN_HIDDEN`, its
    streamed transpose form (not split-K or on FMA units; 3xTF32's products since
    :data:`X3_PIECES_FROM` was measured), whose tile is that many values a thread or more."""
    return (cuda and num_gates in (3, 4) and hidden_size >= BACKWARD_PIECES_MIN_HIDDEN
            and not fields["fma"]
            and not fields["w_resident"] and not fields["h_on_chip"] and not fields.get("split_k")
            and tile_values(fields["block_h"], fields["block_b"], fields["num_warps"]) >= BACKWARD_PIECES_FROM)


def forward_accumulator(plan: Plan, num_gates: int) -> int:
    """A forward step's stacked gate product, ``[gates_padded * block_h, block_b]`` fp32, in values a
    thread (``num_warps`` warps of 32 threads share it)."""
    return next_pow2(num_gates) * plan.block_h * plan.block_b // (32 * plan.num_warps)


def pieces_default(plan: Plan, req: _Request) -> int:
    """:attr:`Plan.pieces` by default. The forward's: on CUDA, for the LSTM's streamed forward that
    exchanges h (no split or padded operands) whose step's accumulator
    (:func:`forward_accumulator`) is :data:`PIECES_FROM` values a thread or more, as many slices as
    bring it to :data:`PIECE_ACCUMULATOR`, each slice at least :data:`MIN_BLOCK_H` units (the
    GRU's in slices was slower: the comment above :data:`PIECES_FROM`). The backward's: where
    :func:`backward_sliced`, slices of :data:`BACKWARD_PIECE_TILE` values a thread. Else 1."""
    if req.backward:
        if not (backward_sliced(req.num_gates, req.hidden_size, dataclasses.asdict(plan), req.cuda)
                and not plan.gate_split):
            return 1
        tile = tile_values(plan.block_h, plan.block_b, plan.num_warps)
        return max(1, min(tile // BACKWARD_PIECE_TILE, plan.block_h // MIN_BLOCK_H))
    accumulator = forward_accumulator(plan, req.num_gates)
    if not (req.cuda and req.num_gates == 4 and _streamed(plan) and not plan.gluon
            and split_once_level(plan) == 0 and accumulator >= PIECES_FROM):
        return 1
    per_slice = PIECE_ACCUMULATOR_TF32 if req.element == 4 else PIECE_ACCUMULATOR
    return max(1, min(accumulator // per_slice, plan.block_h // MIN_BLOCK_H))


def half_saved_default(plan: Plan, req: _Request) -> bool:
    """:attr:`Plan.half_saved` by default: every forward in slices with 16-bit weights."""
    return not req.backward and req.element == 2 and plan.pieces > 1


def _request(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction, bounded,
             override) -> _Request:
    """:func:`choose_plan`'s arguments as one :class:`_Request`."""
    slots, smem = _limits(device, multiprocessors) if device.type == "cuda" else (None, 0)
    return _Request(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction, bounded,
                    _direction_override(override, direction), torch.empty((), dtype=dtype).element_size(),
                    backward_precision(precision, num_gates) if direction == "backward" else precision,
                    dtype != torch.float32 or precision in ("tf32", "tf32x3"), slots, smem)


@dataclass(frozen=True)
class _Request:
    """One call of :func:`choose_plan`: what was asked, and the facts of it that every rule reads.

    ``override`` holds this direction's fields only (:func:`_direction_override`); ``slots`` is the
    programs that can be resident and ``smem`` the shared memory of a block, on CUDA (None and 0
    under the interpreter)."""

    batch_size: int
    hidden_size: int
    num_gates: int
    dtype: torch.dtype
    device: torch.device
    multiprocessors: int | None
    precision: str
    direction: str
    bounded: bool
    override: dict
    element: int
    step_precision: str  # the products this direction runs (the RNN's TF32 backward: 3xTF32)
    tensor_cores: bool
    slots: int | None
    smem: int

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def backward(self) -> bool:
        return self.direction == "backward"


def _direction_override(override: dict, direction: str) -> dict:
    """The fields of ``override`` that apply to ``direction``'s plan: ``split_k`` and
    ``gate_split`` and any field named ``backward_<field>`` to the backward, the forward's own
    fields and any named ``forward_<field>`` to the forward (the other direction's plan is the same
    either way, so one direction can be compared under one override)."""
    kept = {k: v for k, v in override.items() if not k.startswith(("forward_", "backward_"))}
    others = ("split_k", "gate_split") if direction == "forward" else (
        "split_once", "split_fp16", "on_chip_split", "half_operands", "half_weights", "produce", "pad_rows")
    for field in others:
        kept.pop(field, None)
    kept.update({k.removeprefix(f"{direction}_"): v for k, v in override.items() if k.startswith(f"{direction}_")})
    return kept


def _tiles(req: _Request) -> dict:
    """The tile fields (``block_b``, ``block_h``, ``w_resident``, ``num_warps``, ``block_k``,
    ``num_stages``, ``h_on_chip``) of a plan on tensor cores or FMA units that exchanges h or keeps
    it on chip, as :func:`choose_plan`'s docstring lists them, overrides of those applied."""
    override, hidden_size = req.override, req.hidden_size
    gp, kp = gates_padded(req.num_gates), k_padded(hidden_size)
    exchange_asked = not _EXCHANGE_FIELDS.isdisjoint(override) and "h_on_chip" not in override
    if not req.cuda:  # (one program per batch block already)
        on_chip = override.get("h_on_chip", not exchange_asked)
        return {"block_b": max(MIN_BLOCK, next_pow2(req.batch_size)),
                "block_h": kp if on_chip else max(MIN_BLOCK_H, next_pow2(hidden_size)), "w_resident": True,
                "num_warps": 4, "block_k": kp if on_chip else BLOCK_K, "num_stages": 3, "h_on_chip": on_chip}
    forward, tensor_cores = not req.backward, req.tensor_cores
    bh = max(MIN_BLOCK_H, 64 // gp) if tensor_cores else MIN_BLOCK_H
    # Batch blocks of 16 or 32 rows (default_block_b): every forward, and backwards on tensor
    # cores but the LSTM's and GRU's in 3xTF32, whose transpose backward was slower split (their
    # split-K backward takes the forward's blocks anyway). FMA backwards were not measured.
    split_rows = forward or (tensor_cores and not (req.step_precision == "tf32x3" and req.num_gates > 1))
    bb = override.get("block_b", default_block_b(req.batch_size, cdiv(hidden_size, bh), req.slots, split_rows))
    nb = cdiv(req.batch_size, bb)
    while cdiv(hidden_size, bh) * nb > req.slots and bh < MAX_BLOCK_H:
        bh *= 2
    bh = override.get("block_h", bh)
    fits = resident_bytes(bb, bh, hidden_size, req.num_gates, req.element, req.direction) <= (
        req.smem - SHARED_MEMORY_MARGIN)
    resident = tensor_cores and fits and (forward or bh >= 64)
    if forward and req.element == 2 and bb >= STREAM_FORWARD_ROWS:
        resident = False
    x3 = req.step_precision == "tf32x3"  # (strict fp32 both ways; the RNN's TF32 backward)
    if x3:
        resident = resident and forward and kp <= X3_RESIDENT_K
    warps = 8 if bb >= 64 or (resident and not forward) else 4
    if forward and bb >= 64 and tensor_cores and req.element == 4 and gp * bh == 64:
        warps = FP32_WIDE_FORWARD_WARPS  # (a 64-row weight tile: taller ones were not measured)
    # Streamed chunks: fewer, larger round trips, several in flight (a guess; the device sweeps it).
    # Resident (forward): the width of the pieces the weights are held in.
    # Strict fp32 backward: 16-wide chunks (0.66-0.72x the kernel time of 32 in the H100 sweep).
    # 3xTF32 backward: 64-wide chunks (128 spilled 72-112 bytes per thread, sm_90; the split-K
    # backward then widens its partials to X3_SPLIT_K_ROWS at 8 warps: _split_k_fields).
    block_k = (128 if not forward and not x3 else BLOCK_K) if tensor_cores else (32 if forward else 16)
    if resident and forward:
        block_k = resident_piece(bb, req.element, hidden_size)
    # (Past 16 x multiprocessors batch rows its programs could not all be resident: exchange.)
    on_chip = override.get("h_on_chip", not exchange_asked and tensor_cores and on_chip_default(
        hidden_size, req.num_gates, req.element, req.step_precision, req.direction, req.smem)
        and -(-req.batch_size // MIN_BLOCK) <= req.slots)
    if on_chip:  # the fewest rows per program: batch blocks run side by side, never waiting
        bb, bh, resident, block_k = MIN_BLOCK, kp, True, kp
        warps = on_chip_warps(hidden_size, req.num_gates, req.step_precision)
    return {"block_b": bb, "block_h": bh, "w_resident": resident, "num_warps": warps, "block_k": block_k,
            "num_stages": 4 if tensor_cores else 3, "h_on_chip": on_chip}


def _gated_fma(req: _Request) -> bool:
    """Whether the LSTM's or GRU's forward on FMA units can run here (asked for or the default)."""
    return req.num_gates > 1 and not req.backward and req.slots is not None and gated_fma_fits(
        req.num_gates, req.hidden_size, req.element, req.device, req.smem)


def _fma_fields(req: _Request) -> dict:
    """``fma`` and ``half_weights``, and where ``fma``, the tiles of a program per batch row with
    every unit and the weights on chip (the RNN's in registers; the LSTM's and GRU's k in parts of
    their lanes, ops/gluon_fma.py). A tile, a weight path, warps, an on-chip split or the exchange
    asked for means tensor cores."""
    override, hidden_size = req.override, req.hidden_size
    tiles_asked = (not _EXCHANGE_FIELDS.isdisjoint(override) or override.get("h_on_chip") is False
                   or not {"block_b", "num_warps", "on_chip_split"}.isdisjoint(override))
    default = req.cuda and not tiles_asked and (
        _gated_fma(req) and gated_fma_default(req.batch_size, req.num_gates, req.dtype, req.slots) if req.num_gates > 1
        else fma_default(req.batch_size, hidden_size, req.num_gates, req.dtype, req.slots))
    fma = override.get("fma", default)
    if not fma:
        return {"fma": fma, "half_weights": False}
    kp = k_padded(hidden_size)
    fields = {"fma": fma, "half_weights": False, "block_b": 1, "block_h": kp, "w_resident": True, "block_k": kp,
              "h_on_chip": True, "num_warps": fma_warps(hidden_size)}
    if req.num_gates > 1:
        from . import gluon_fma

        # (TF32: the weights as scaled fp16 where 16-bit weights split k; asked for, anywhere)
        parts_16bit = gluon_fma.k_split(req.num_gates, hidden_size, 2)
        half_weights = override.get("half_weights", HALF_WEIGHTS and req.dtype == torch.float32
                                    and req.precision == "tf32" and parts_16bit > 1)
        fields["half_weights"] = half_weights
        fields["num_warps"] *= parts_16bit if half_weights else gluon_fma.k_split(req.num_gates, hidden_size,
                                                                                  req.element)
    return fields


def _split_once_fields(req: _Request, tiles: dict) -> dict:
    """Strict fp32's streamed forward split once (``split_once``, ``split_w_once``,
    ``split_fp16``) and the chunks and stages that follow from it; an override of ``split_once``
    decides the chunks too, so that asking for none gives the plan without."""
    override = req.override
    resident = tiles["w_resident"]
    streamed = (SPLIT_ONCE and req.cuda and not req.backward and req.precision == "tf32x3" and not tiles["h_on_chip"]
                and not resident)
    streamed = override.get("split_once", streamed)
    split_w_once = override.get("split_w_once", streamed and tiles["block_b"] >= SPLIT_W_ONCE_ROWS)
    split_fp16 = override.get("split_fp16", SPLIT_FP16 and streamed and req.bounded
                              and not override.get("w_resident", resident))
    fields = {"split_once": streamed, "split_w_once": split_w_once, "split_fp16": split_fp16}
    if split_fp16:  # (its copy is both halves in fp16: split_w_once says nothing more)
        fields.update(block_k=SPLIT_FP16_BLOCK_K, num_stages=SPLIT_FP16_STAGES, split_w_once=False)
    elif streamed and not resident:
        fields.update(block_k=SPLIT_ONCE_BLOCK_K,
                      num_stages=SPLIT_W_ONCE_STAGES if split_w_once else tiles["num_stages"])
    return fields


def _chip_split(req: _Request, fields: dict) -> str:
    """The on-chip RNN's strict fp32 forward in 3xFP16: graphed forwards 0.89-0.90x the time of
    Triton's tf32x3 on the H100 at hidden 64-128, tanh and relu, errors against float64 the same
    (results/h100/chip-split); 3xTF32 split once gained nothing (0.99x)."""
    return "fp16" if (req.cuda and fields["h_on_chip"] and not fields["fma"] and not req.backward
                      and req.num_gates == 1 and req.precision == "tf32x3" and req.dtype == torch.float32) else ""


def _backward_fields(req: _Request, fields: dict) -> dict:
    """The LSTM's and GRU's backward: split-K (:func:`_split_k_fields`) or the gate split, by
    default or as asked, as :func:`choose_plan`'s docstring lists them; no fields for the transpose
    plan or a forward.

    Raises:
        ValueError: ``split_k`` asked of the RNN."""
    if not req.backward:
        return {}
    override, hidden_size, bb = req.override, req.hidden_size, fields["block_b"]
    on_chip, cells = fields["h_on_chip"], req.num_gates in (3, 4)
    split_default = (req.cuda and cells and req.tensor_cores and not on_chip
                     and hidden_size <= (SPLIT_K_16BIT_MAX_HIDDEN if req.element == 2 else SPLIT_K_MAX_HIDDEN))
    # The LSTM's and GRU's backward in slices (BACKWARD_PIECES_FROM): the transpose plan, its product one.
    if (backward_sliced(req.num_gates, hidden_size, {**fields, "w_resident": False}, req.cuda)
            and override.get("pieces", 2) > 1 and not {"split_k", "gate_split"} & override.keys()):
        return {"w_resident": False}
    gate_default = (req.cuda and cells and req.tensor_cores and not on_chip and not fields["fma"]
                    and not override.get("w_resident") and (hidden_size <= GATE_SPLIT_MAX_HIDDEN or (
                        hidden_size <= GATE_SPLIT_WIDE_MAX_HIDDEN and fields["block_h"] <= GATE_SPLIT_WIDE_MAX_UNITS))
                    and (not split_default or (bb >= GATE_SPLIT_ROWS and (hidden_size >= GATE_SPLIT_MIN_HIDDEN or (
                        hidden_size >= GATE_SPLIT_MIN_ALIGNED_HIDDEN and not unaligned(hidden_size)))))
                    and _gate_groups_fit(hidden_size, fields["block_h"], req.num_gates, req.batch_size, bb, req.slots))
    if gate_default and "split_k" not in override:
        split_default = False
    if override.get("split_k", split_default):
        if not cells:
            raise ValueError("split_k is the LSTM's and GRU's backward only, so far")
        split = _split_k_fields(req.batch_size, hidden_size, req.num_gates, req.dtype, req.device,
                                req.multiprocessors, req.precision, req.step_precision, override)
        # (streamed where its narrowest chunk and the gate gradients do not fit: the transpose plan)
        narrowest = Plan(**{**split, "block_k": MIN_BLOCK, "num_stages": 1})
        if "split_k" in override or split["w_resident"] or _chunks_fit_in(narrowest, req):
            return split
        return {}
    if override.get("gate_split", gate_default):
        return {"gate_split": req.num_gates, "w_resident": False,
                "num_stages": GATE_SPLIT_FEW_ROWS_STAGES if bb < GATE_SPLIT_ROWS else fields["num_stages"]}
    return {}


def streamed_bytes(plan: Plan, hidden_size: int, num_gates: int, element: int, direction: str,
                   precision: str = "") -> int:
    """Shared memory of the chunks in flight of a step that streams its weights (neither resident
    nor on chip): ``num_stages`` chunks of ``block_k`` columns of the program's weight rows and of
    its batch rows' operand. Forward: ``gates_padded * block_h`` weight rows and h, in ``element``
    bytes, but a split-once forward's operands split (:func:`split_once_stage_bytes`; with
    :attr:`Plan.split_fp16` both fp16 halves, 4 bytes). Backward: the units of its
    :attr:`Plan.gate_split` group to a power of 2 (the kernel's ``SPAN_PAD``) or its ``block_h``
    (the transpose plan), and the gate gradients; split-K's ``gates_padded * block_h`` weight rows,
    and its program's whole fp32 tile of gate gradients staged once (twice, split, for 3xTF32:
    ``precision`` is the step's).

    At most what Triton 3.6 allocates for sm_90 (``ops/aot.py``; ``results/h200/coverage``): every
    forward and transpose backward that overflowed on the H200 took exactly this, strict fp32's
    FMA forward (``ieee``) one chunk fewer; split-K backwards took less (the compiler shares their
    buffers: at 64 rows and 128 units, 3xTF32's took 256 KB with 32- and 16-wide chunks alike)."""
    if plan.split_once and not plan.split_fp16:
        return plan.num_stages * split_once_stage_bytes(plan.block_b, gates_padded(num_gates) * plan.block_h,
                                                        plan.block_k, plan.split_w_once)
    if plan.split_k:
        rows = gates_padded(num_gates) * plan.block_h
        gradients = (2 if precision == "tf32x3" else 1) * plan.block_b * rows * 4
        return gradients + plan.num_stages * rows * plan.block_k * element
    if direction == "forward":
        rows = gates_padded(num_gates) * plan.block_h
    else:
        rows = gate_split_constexprs(plan, hidden_size)["SPAN_PAD"] if plan.gate_split else plan.block_h
    return plan.num_stages * (rows + plan.block_b) * plan.block_k * (4 if plan.split_fp16 else element)


def _streamed(plan: Plan) -> bool:
    """Whether ``plan`` streams its weights through shared memory a chunk at a time."""
    return not (plan.w_resident or plan.h_on_chip or plan.fma)


def _chunks_fit_in(plan: Plan, req: _Request) -> bool:
    """Whether ``plan``'s chunks in flight (:func:`streamed_bytes`) fit in the block's shared
    memory less :data:`SHARED_MEMORY_MARGIN`."""
    return streamed_bytes(plan, req.hidden_size, req.num_gates, req.element, req.direction,
                          req.step_precision) <= req.smem - SHARED_MEMORY_MARGIN


def _chunks_fit(plan: Plan, req: _Request) -> Plan:
    """``plan`` with a streamed step's chunks in flight (:func:`streamed_bytes`) narrowed to fit
    in a block's shared memory less :data:`SHARED_MEMORY_MARGIN`: chunks half as wide down to
    :data:`MIN_BLOCK`, then fewer in flight (a split-once forward's: fewer in flight only, from its
    measured width).
    The transpose backward at 64 batch rows and 64 units a program, 128-wide fp32 chunks four in
    flight, took 256 KB, over the H100's and H200's 227 (TF32 at batch 128, hidden 2560-4096:
    OutOfResources, results/h200/gate-split-wide/wider-91dd18e), and so did forwards and split-K
    backwards at 128-256 units a program, which 256-1024 batch rows take (results/h200/coverage).
    An asked ``block_k`` or ``num_stages`` as asked, the other fitted to it (:func:`_check_plan`
    refuses what still does not fit).

    Raises:
        ValueError: a gate split that is not the LSTM's or GRU's transpose backward with streamed
            weights."""
    if plan.gate_split and (not req.backward or req.num_gates not in (3, 4) or plan.split_k or plan.h_on_chip
                            or plan.w_resident or plan.fma):
        raise ValueError("gate_split is the LSTM's and GRU's transpose backward with streamed weights (not split_k, "
                         "h_on_chip or w_resident)")
    if req.slots is None or not _streamed(plan):
        return plan
    narrows = "block_k" not in req.override and not (plan.split_once and not plan.split_fp16)
    while narrows and plan.block_k > MIN_BLOCK and not _chunks_fit_in(plan, req):
        plan = dataclasses.replace(plan, block_k=plan.block_k // 2)
    while "num_stages" not in req.override and plan.num_stages > 1 and not _chunks_fit_in(plan, req):
        plan = dataclasses.replace(plan, num_stages=plan.num_stages - 1)
    return plan


def _kernel_fields(plan: Plan, req: _Request) -> Plan:
    """``plan`` with the kernel's choices that follow from its tiles, overrides applied: the Gluon
    forward, its weights in registers and its projection ahead wherever allowed (refused where
    asked and not allowed), and the 16-bit forward's rows padded.

    Raises:
        ValueError: ``gluon``, ``reg_weights`` or ``input_ahead`` asked where not allowed."""
    override, hidden_size, kp = req.override, req.hidden_size, k_padded(req.hidden_size)
    gluon_allowed = not req.backward and gluon_forward(
        req.num_gates, req.element, hidden_size, plan.block_b, plan.block_h, plan.w_resident, plan.h_on_chip,
        plan.num_warps, plan.fast_activations, req.device, req.multiprocessors, req.smem)
    if plan.gluon and not gluon_allowed:
        raise ValueError("gluon is the LSTM's and GRU's forward with 16-bit resident weights, 16 units and at most 32 "
                         f"batch rows a program at 4 warps, hidden {GLUON_MIN_HIDDEN} to {GLUON_MAX_HIDDEN}, fast "
                         "activations, on sm_90 with Gluon")
    plan = dataclasses.replace(plan, gluon=override.get("gluon", gluon_allowed and not plan.pad_rows))
    from .gluon_common import MAX_PIECE, pieces

    reg_allowed = plan.gluon and pieces(hidden_size, kp) <= REG_WEIGHTS_MAX_PIECES
    if plan.reg_weights and not reg_allowed:
        raise ValueError(f"reg_weights is the Gluon forward's, up to {REG_WEIGHTS_MAX_PIECES} pieces of h "
                         f"({REG_WEIGHTS_MAX_PIECES * MAX_PIECE} units)")
    plan = dataclasses.replace(plan, reg_weights=override.get("reg_weights", reg_allowed))
    programs = plan.grid(req.batch_size, hidden_size)
    ahead_allowed = plan.gluon and programs[0] * programs[1] <= AHEAD_MAX_PROGRAMS * req.slots  # (gluon: CUDA)
    if plan.input_ahead and not ahead_allowed:
        raise ValueError("input_ahead is the Gluon forward's, with programs on at most "
                         f"{AHEAD_MAX_PROGRAMS:.0%} of the multiprocessors")
    plan = dataclasses.replace(plan, input_ahead=override.get("input_ahead",
                                                              ahead_allowed and req.num_gates == AHEAD_DEFAULT_GATES))
    if "pad_rows" not in override and req.cuda and _pads_16bit_forward(plan, req.direction, req.element,
                                                                       req.num_gates, hidden_size):
        plan = dataclasses.replace(plan, pad_rows=True)
    return plan


def _half_operands_default(plan: Plan, req: _Request) -> bool:
    """Whether ``plan`` is planned again on fp16 operands (:func:`_half_operands_plan`): asked
    for, or by default TF32's LSTM and GRU forward past :data:`FMA_MAX_K` that exchanges h, none of
    TF32's own operand fields asked for, where its own operands would run neither in slices
    (:func:`pieces_default`) nor at 128 rows (:func:`wide_rows_default`)."""
    if "half_operands" in req.override:
        return plan.half_operands
    return (HALF_OPERANDS and req.cuda and not req.backward and req.dtype == torch.float32
            and req.precision == "tf32" and req.num_gates in (3, 4) and k_padded(req.hidden_size) > FMA_MAX_K
            and _TF32_OPERAND_FIELDS.isdisjoint(req.override) and not (plan.h_on_chip or plan.fma)
            and pieces_default(plan, req) == 1  # (else its own operands in slices: PIECE_ACCUMULATOR_TF32)
            and not wide_rows_default(plan, req))  # (the GRU's, which takes no slices at 64 rows)


def _check_plan(plan: Plan, req: _Request) -> None:
    """Refuse a plan, overrides applied, that no kernel runs or whose programs cannot all be
    resident (the rest of :func:`choose_plan`'s Raises)."""
    hidden_size, direction, element, num_gates, slots = (req.hidden_size, req.direction, req.element, req.num_gates,
                                                         req.slots)
    kp, fp32 = k_padded(hidden_size), req.dtype == torch.float32
    strict_or_interpreted = not req.cuda or req.precision == "tf32x3"  # (the precision a split needs)
    if plan.pad_rows and not plan.split_k and not _exchanges_16bit_forward(plan, direction, element, num_gates):
        raise ValueError("pad_rows is the LSTM's and GRU's TF32 forward on fp16 operands (half_operands), their "
                         "forward with 16-bit weights that exchanges h (not Gluon), and their split-K backward")
    if plan.pad_rows and direction == "forward" and not padded_units_covered(plan):
        raise ValueError(f"pad_rows in a forward needs a multiple of {PAD_ROWS_TO} units a program (block_h), "
                         f"got {plan.block_h}")
    if plan.fast_activations and not req.cuda:
        raise ValueError("fast_activations needs CUDA (inline PTX, which the interpreter cannot run)")
    if plan.split_once and (direction != "forward" or plan.h_on_chip or not fp32 or not strict_or_interpreted):
        raise ValueError("split_once is for 3xTF32 forwards that exchange h (float32 weights, strict fp32 on "
                         "CUDA), not on chip")
    if plan.split_fp16 and not (plan.split_once and not plan.w_resident and req.bounded):
        raise ValueError("split_fp16 is strict fp32's forward with split_once and streamed weights (w_resident "
                         "False), of a cell whose h is bounded (not the RNN's relu)")
    if plan.on_chip_split not in ON_CHIP_SPLITS:
        raise ValueError(f"on_chip_split is one of {sorted(ON_CHIP_SPLITS)}, got {plan.on_chip_split!r}")
    if plan.on_chip_split and (num_gates != 1 or not plan.h_on_chip or not fp32 or not strict_or_interpreted):
        raise ValueError("on_chip_split is for the RNN's strict fp32 forward on chip (float32 weights, 3xTF32 on CUDA)")
    if plan.fma and ((num_gates > 1 and not _gated_fma(req)) or kp > FMA_MAX_K or plan.block_b != 1
                     or not plan.h_on_chip or plan.on_chip_split):
        raise ValueError(f"fma is the RNN's up to hidden_size {FMA_MAX_K}, one batch row a program on chip, and the "
                         "LSTM's and GRU's forwards there with W_hh on one multiprocessor (CUDA, Gluon)")
    if plan.half_weights and not (plan.fma and num_gates > 1 and fp32 and direction == "forward"
                                  and (not req.cuda or req.precision == "tf32")):
        raise ValueError("half_weights is the LSTM's and GRU's forward on FMA units with float32 weights, TF32 on CUDA")
    if plan.produce and not (plan.fma and direction == "forward"):
        raise ValueError("produce is a forward on FMA units (fma)")
    if plan.produce and num_gates > 1 and not req.tensor_cores:
        raise ValueError("produce for the LSTM and GRU takes its products on tensor cores (no IEEE fp32 tile)")
    if plan.produce and slots is not None and slots - req.batch_size < 1:
        raise ValueError(f"produce needs a multiprocessor beside the {req.batch_size} batch rows' programs ({slots})")
    if plan.fma and req.batch_size > MAX_GRID_Y:
        raise ValueError(f"fma runs a program per batch row: at most {MAX_GRID_Y} rows (CUDA's grid), "
                         f"got {req.batch_size}")
    if plan.split_k and plan.h_on_chip:
        raise ValueError("split_k and h_on_chip exclude each other (an on-chip backward exchanges nothing)")
    if plan.h_on_chip and not (plan.w_resident and plan.block_h == kp and plan.block_k == kp):
        raise ValueError(f"h_on_chip needs resident weights and block_h = block_k = {kp} at hidden_size "
                         f"{hidden_size}, got {plan.block_h}, {plan.block_k}")
    if plan.h_on_chip and slots is not None and not plan.fma and (
            on_chip_bytes(plan.block_b, hidden_size, num_gates, element, direction) > req.smem - SHARED_MEMORY_MARGIN):
        raise ValueError(f"an on-chip tile at hidden_size {hidden_size} does not fit in shared memory")
    # (the kernels in slices: ops/lstm/pieces.py, ops/gru/pieces.py)
    sliced = num_gates in (3, 4) and not (split_once_level(plan) if direction == "forward" else plan.split_k)
    if plan.pieces != 1 and (not sliced or plan.w_resident or plan.h_on_chip or plan.fma or plan.gluon
                             or plan.pieces != next_pow2(plan.pieces) or plan.block_h // max(plan.pieces, 1) < MIN_BLOCK_H):
        raise ValueError(f"pieces is the LSTM's and GRU's forward with streamed weights that exchanges h (no "
                         f"split or padded operands) and their streamed transpose backward, in a power of 2 "
                         f"of slices of at least {MIN_BLOCK_H} units, got {plan.pieces} of block_h {plan.block_h}")
    if plan.half_saved and (direction != "forward" or element != 2 or plan.pieces == 1):
        raise ValueError("half_saved is the LSTM's and GRU's forward in slices (pieces > 1) with 16-bit weights")
    for name, least in (("block_b", 1 if plan.fma else MIN_BLOCK), ("block_h", MIN_BLOCK_H), ("block_k", MIN_BLOCK)):
        value = getattr(plan, name)
        if value < least or value != next_pow2(value):
            raise ValueError(f"{name} must be a power of 2 >= {least}, got {value}")
    nh, nb = plan.grid(req.batch_size, hidden_size)
    if slots is None and nh > 1 and not INTERPRETER_PROGRAMS_CONCURRENT:
        raise ValueError(f"{nh} programs per batch block would wait for each other forever under "
                         "the interpreter (it runs programs one after another); use block_h >= hidden_size")
    if slots is not None and nh * nb > slots and not plan.fma:  # (fma programs never wait for each other)
        raise ValueError(f"{nh * nb} programs cannot all be resident on {slots} multiprocessors "
                         f"(batch_size {req.batch_size}, hidden_size {hidden_size})")
    if slots is not None and _streamed(plan) and not _chunks_fit_in(plan, req):
        raise ValueError(f"{plan.num_stages} chunks {plan.block_k} wide in flight do not fit in shared memory at "
                         f"batch_size {req.batch_size}, hidden_size {hidden_size} ({plan.block_b} batch rows and "
                         f"{plan.block_h} units a program)")


def _half_operands_plan(batch_size, hidden_size, num_gates, dtype, device, multiprocessors, precision, direction,
                        asked: dict) -> Plan:
    """:attr:`Plan.half_operands`: the forward planned as fp16's (its tiles, residency, warps and
    stages; ``asked``'s overrides applied; never Gluon, whose kernels take 16-bit tensors), with
    fp16 operands, and its own fp16 rows padded (:attr:`Plan.pad_rows`) where ``hidden_size`` is
    not a multiple of :data:`PAD_ROWS_TO`, unless asked otherwise.

    Raises:
        ValueError: not the LSTM's or GRU's forward with float32 weights (TF32 on CUDA), or asked
            on chip, on FMA units or split for 3xTF32. (Gluon and the projection ahead, asked for
            with float32 weights, were refused before.)
    """
    fields = {k: v for k, v in asked.items() if k not in ("half_operands", "forward_half_operands")}
    pad_asked = fields.pop("forward_pad_rows", fields.pop("pad_rows", None))  # (the forward's own)
    pieces = fields.pop("forward_pieces", fields.pop("pieces", 1))
    if (direction != "forward" or dtype != torch.float32 or num_gates not in (3, 4) or pieces != 1
            or (device.type == "cuda" and precision != "tf32") or any(
                fields.get(prefix + name) for prefix in ("", "forward_")
                for name in ("h_on_chip", "fma", "split_once", "split_w_once"))):
        raise ValueError("half_operands is the LSTM's and GRU's forward with float32 weights (TF32 on CUDA) that "
                         "exchanges h: not on chip, FMA, Gluon, 3xTF32 or in pieces")
    fields.update(gluon=False, input_ahead=False, pieces=1)  # (ops/lstm/pieces.py takes no fp16 copies)
    fields.update(h_on_chip=False, fma=False)  # (fp16's plan at a small width, or the interpreter's, is on chip)
    plan = choose_plan(batch_size, hidden_size, num_gates, torch.float16, device, multiprocessors, "ieee", direction,
                       **fields, pad_rows=bool(pad_asked))  # (asked with too few units a program: refused there)
    pad = _pads_by_default(plan, hidden_size) if pad_asked is None else plan.pad_rows
    return dataclasses.replace(plan, half_operands=True, pad_rows=pad)


def _gate_groups_fit(hidden_size: int, block_h: int, num_gates: int, batch_size: int, block_b: int,
                     slots: int | None) -> bool:
    """Whether :attr:`Plan.gate_split`'s programs, whole groups of ``num_gates`` unit blocks per
    batch block, can all be resident."""
    units = whole_groups(-(-hidden_size // block_h), num_gates)
    return slots is not None and units * -(-batch_size // block_b) <= slots


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
            "num_warps": warps, "num_stages": 3, "h_on_chip": False, "split_k": True, "half_partials": element == 2,
            "pad_rows": unaligned(hidden_size) and forward.block_b >= PAD_PARTIALS_MIN_BLOCK_B}


STRICT_FP32_DEFAULT = "tf32x3"  # the products of float32 with TF32 off (see dot_precision)
# torch's TF32 switch as dot_precision reads it on every eager call (the plans' key): the property
# ``torch.backends.cuda.matmul.allow_tf32`` goes through its module's __getattr__ to the C getter
# (0.6 µs a read on the H100's host: benchmarks/results/h100/call-floor/suite-8366dc7/host_parts.txt);
# the property itself where a torch lacks the getter.
_allows_tf32 = getattr(torch._C, "_get_cublas_allow_tf32", None) or (lambda: torch.backends.cuda.matmul.allow_tf32)


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
    if _allows_tf32():
        return "tf32"
    return strict_fp32


# A TF32 layer this narrow multiplies as strict fp32 does (layer_precision): on the H200, the RNN's
# TF32 training at hidden 1 missed float64 by 1.15e-2 in its bias gradients (sums whose terms cancel,
# each off by TF32's rounding of the input projection) against TF32's 1e-2 tolerance, 1.5-5.7e-3 on
# neighbouring draws, where cuDNN, which takes no TF32 at that size, missed by 4.2e-5
# (results/h200/speed-map/tf32-hidden1-ee2b5ae). Up to 16 units a step's products are one chunk
# of the reduction, mostly padding: strict products cost little there.
STRICT_TF32_MAX_HIDDEN = 16


def layer_precision(dtype: torch.dtype, hidden_size: int, strict_fp32: str = STRICT_FP32_DEFAULT) -> str:
    """:func:`dot_precision` for a layer ``hidden_size`` wide: TF32's becomes ``strict_fp32`` up to
    :data:`STRICT_TF32_MAX_HIDDEN` units (every product of the layer: the recurrence, the input
    projection, the gradients; torch's own products too, :func:`~rnnbench.ops.products.cublas_at`)."""
    precision = dot_precision(dtype, strict_fp32)
    return strict_fp32 if precision == "tf32" and hidden_size <= STRICT_TF32_MAX_HIDDEN else precision


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
