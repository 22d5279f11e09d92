"""The input projection by producer programs of the LSTM's and GRU's forwards on FMA units
(``Plan.produce`` for the gated cells, ``ops/lstm/fma.py``, ``ops/gru/fma.py``), in Gluon.

Why: an eager forward at hidden 100-128 is host time, and its projection's own launch cost one
launch's worth of it: on the H200, the replayed eager forward with that launch made a no-op took
0.86-1.10x the time (median 0.91x over 18 rows) at theano's and glample's sizes
(``benchmarks/results/h200/produce-gated/``), as the RNN's producers gained 0.91x on the H100
(``ops/rnn/fma.py``, ``results/h100/produce``). The RNN's producers run the projection kernel's own
``tl`` tiles; a Gluon kernel cannot call ``tl`` code, so these tiles are written here.

``x_proj [T B, G H] = x [T B, I] @ W_ih^T`` (``W_ih [G H, I]`` row-major), in ``[BM, BN]`` tiles
on the tensor cores by ``mma.sync`` (``mma_v2``): the operands loaded from global memory in a
coalesced layout and converted to the instruction's (through shared memory, by the compiler),
accumulated in fp32 over ``BK``-deep chunks of k. Products by ``PRECISION``, as the projection's
launch takes them (``plans.dot_precision``): ``tf32x3`` (strict fp32) as three TF32 products of
operands split into a TF32 part (rounded to nearest) and its remainder, the small terms first;
``tf32`` on operands rounded to TF32; 16-bit operands as they are. Not the projection kernel's
instructions, so not its sums bit for bit: an eager call that produces and a captured one that
does not agree to the precision's rounding, not to the bit. Strict fp32 on the FMA units
(``ieee`` with fp32 operands) has no producer (``plans.produce_default``).

Each tile is counted once stored (``gluon_common._arrive``: every thread's stores, a CTA barrier,
then a release add), and a row's program waits for every tile (``_wait_arrivals``) before its
first read of ``x_proj``, which it reads through L2 (``.cg``). The count is the stream's shared
counters' (``launch.counters``, two: tiles done, rows out), which the last row out sets back to
zero (:func:`rows_out`), as the RNN's producers do: a replayed call then passes the same buffer
each time, where a fresh slice of a counter pool (``launch.counted_counters``, the Gluon
tensor-core forwards') is Python a call (a first form took one, and its eager forwards took
1.00-1.13x the time of the projection launched before them on the H200). The producing kernels
compile without spills (sm_90, Triton 3.6: 212-255 registers a thread against the plain ones'
206-255; the bf16 LSTM at hidden 100 211 -> 254; ``results/h200/produce-gated/local-9f16c6f``).
Producers come first in the grid; every program of the launch is resident at once (producers at
most the multiprocessors beside the rows, ``plans.producers``), so a row never waits for a
program that has not started.
"""

from __future__ import annotations

from .gluon_common import AVAILABLE

# A tile's rows (T B), its k chunk, and its widths (G H), the narrower first: the wider is taken
# where the narrower's tiles would outnumber the producers (every tile has a producer of its own:
# ``recurrence.produces``). 64 rows: 16 a warp at 4 warps, mma.sync's m16 (8 warps: four down
# the rows, two across the columns). The k chunk is a multiple of both instructions' k (8 for
# TF32, 16 for 16 bits).
TILE_M, TILE_K = 64, 32
TILE_N = (64, 128)


def tiles_for(rows: int, gate_width: int, programs: int) -> tuple[int, int] | None:
    """``(BN, count)``: the narrowest width of :data:`TILE_N` whose tiles of a ``rows x
    gate_width`` projection number at most ``programs`` (and that count), or None where none does."""
    for bn in TILE_N:
        count = -(-rows // TILE_M) * -(-gate_width // bn)
        if count <= programs:
            return bn, count
    return None


def constexprs(precision: str, bn: int) -> dict:
    """A producing gated forward's compile-time arguments for its tiles (``PRODUCE`` and theirs)."""
    return dict(PRODUCE=True, PRECISION=precision, BM=TILE_M, BN=bn, BK=TILE_K)


# The same arguments of a gated forward that does not produce (none of them read; every constexpr is
# passed by value, as the cached launch passes them all).
UNPRODUCED = dict(PRODUCE=False, PRECISION="ieee", BM=TILE_M, BN=TILE_N[0], BK=TILE_K)


if AVAILABLE:
    from triton.experimental.gluon.language.nvidia.ampere import mma_v2

    from .gluon_common import _arrive, gl, gluon

    @gluon.constexpr_function
    def acc_layout(num_warps, bm):
        """The ``[BM, BN]`` accumulator of ``mma.sync`` (m16n8): warps down the rows (16 each),
        the rest across the columns."""
        down = min(num_warps, bm // 16)
        return gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[down, num_warps // down],
                                         instr_shape=[16, 8])

    @gluon.jit
    def _tf32(x):
        """``x`` rounded to TF32 (to nearest, ties away: ``cvt.rna``), as an fp32 value."""
        return gl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True,
                                         pack=1)

    @gluon.jit
    def _chunk_product(a, b, acc, PRECISION: gl.constexpr):
        """``acc + a @ b`` for one k chunk (operands in ``mma_v2``'s layouts), by ``PRECISION``."""
        if PRECISION == "tf32x3":
            a_hi = _tf32(a)
            b_hi = _tf32(b)
            acc = mma_v2(a - a_hi, b_hi, acc, input_precision="tf32")
            acc = mma_v2(a_hi, b - b_hi, acc, input_precision="tf32")
            acc = mma_v2(a_hi, b_hi, acc, input_precision="tf32")
        elif PRECISION == "tf32":
            acc = mma_v2(_tf32(a), _tf32(b), acc, input_precision="tf32")
        else:
            acc = mma_v2(a, b, acc)
        return acc

    @gluon.jit
    def produce_tiles(x_ptr, w_ih_ptr, out_ptr, counter_ptr, ROWS, I, GH: gl.constexpr, producer, PRODUCERS,
                      PRECISION: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                      num_warps: gl.constexpr):
        """Tiles ``producer``, ``producer + PRODUCERS``, ... (row-major: the first steps' rows first)
        of ``out [ROWS, GH] = x [ROWS, I] @ W_ih^T`` (every tensor contiguous; ``out`` in ``W_ih``'s
        dtype), each counted at ``counter_ptr`` once stored (see the module docstring)."""
        ACC: gl.constexpr = acc_layout(num_warps, BM)
        WIDTH: gl.constexpr = 1 if w_ih_ptr.dtype.element_ty == gl.float32 else 2  # (elements a 32-bit register)
        A_OP: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ACC, k_width=WIDTH)
        B_OP: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=ACC, k_width=WIDTH)
        # Coalesced loads, k contiguous in both operands: x's rows [BM, BK]; W_ih's rows as the
        # columns of a [BK, BN] tile.
        A_LOAD: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [num_warps, 1], [1, 0])
        B_LOAD: gl.constexpr = gl.BlockedLayout([4, 1], [8, 4], [1, num_warps], [0, 1])
        columns = gl.cdiv(GH, BN)
        tiles = gl.cdiv(ROWS, BM) * columns
        for tile in range(producer, tiles, PRODUCERS):
            m0 = (tile // columns) * BM
            n0 = (tile % columns) * BN
            a_rows = m0 + gl.arange(0, BM, layout=gl.SliceLayout(1, A_LOAD))
            a_k = gl.arange(0, BK, layout=gl.SliceLayout(0, A_LOAD))
            b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, B_LOAD))
            b_cols = n0 + gl.arange(0, BN, layout=gl.SliceLayout(0, B_LOAD))
            a_ptrs = x_ptr + a_rows.to(gl.int64)[:, None] * I + a_k[None, :]
            b_ptrs = w_ih_ptr + b_cols[None, :] * I + b_k[:, None]
            acc = gl.zeros([BM, BN], gl.float32, ACC)
            for k0 in range(0, I, BK):
                a = gl.load(a_ptrs + k0, mask=(a_rows < ROWS)[:, None] & (a_k + k0 < I)[None, :], other=0.0)
                b = gl.load(b_ptrs + k0, mask=(b_k + k0 < I)[:, None] & (b_cols < GH)[None, :], other=0.0)
                acc = _chunk_product(gl.convert_layout(a, A_OP), gl.convert_layout(b, B_OP), acc, PRECISION)
            rows = m0 + gl.arange(0, BM, layout=gl.SliceLayout(1, ACC))
            cols = n0 + gl.arange(0, BN, layout=gl.SliceLayout(0, ACC))
            gl.store(out_ptr + rows.to(gl.int64)[:, None] * GH + cols[None, :],
                     acc.to(out_ptr.dtype.element_ty), mask=(rows < ROWS)[:, None] & (cols < GH)[None, :])
            _arrive(counter_ptr)

    @gluon.jit
    def rows_out(counter_ptr, rows):
        """Count this batch row out (``counter_ptr[1]``); the last of ``rows`` sets the tiles' count
        (``[0]``) and its own back to zero for the next launch (every row has read every tile by
        then), as the RNN's producing forward does (``rnn/fma.py``, ``_rows_out``)."""
        if gl.atomic_add(counter_ptr + 1, 1, sem="acq_rel", scope="gpu") == rows - 1:
            gl.atomic_xchg(counter_ptr, 0, sem="relaxed", scope="gpu")
            gl.atomic_xchg(counter_ptr + 1, 0, sem="relaxed", scope="gpu")
