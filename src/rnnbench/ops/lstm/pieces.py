"""The LSTM's streamed forward and transpose backward with their steps in slices of units
(:attr:`Plan.pieces`); the backward's is ``lstm_backward_pieces_kernel``'s docstring.

Every program of a recurrence must be resident (they meet at a grid barrier each step), so at
large batch × hidden each program's tile is large: at batch 1024, hidden 2048, 128 programs of 64
rows × 256 units, whose stacked gate product ``[4 * 256, 64]`` in fp32 is 256 values a thread at
8 warps, the whole register file. ``lstm_forward_kernel`` holds that accumulator, the step's input
projection, h and c across the step and spills 2.4-3.4 KB a thread there (compiled for sm_90,
``results/h200/speed-map/aot-spills``). Here the program computes its tile ``PIECES`` slices of
units at a time: a slice's product (its rows of ``W_hh``, every chunk of ``h_{t-1}``), gates, cell
update, stores of h_t and c_t, then the next slice. Nothing of a slice is live in the next, so
the accumulator is ``1 / PIECES`` of the tile; the price is reading h's chunks ``PIECES`` times a
step (from L2, beside the ``4 * BLOCK_H`` rows of ``W_hh`` streamed). On the H200 in bf16 at batch
1024, hidden 2048, 4 slices took 0.37x the whole tile's time a step (``results/h200/pieces``).

The tile's offsets are formed at each use from vectors that change with t (:func:`_at`): held as
tiles across the time loop, every slice's would fill the registers the slices free.

c_t lives in fp32 in memory between steps: ``c_buf [T+1, B, H]`` when saving for the backward
(step t reads ``c_buf[t]``, writes ``c_buf[t+1]``), else a ``[2, B, H]`` scratch, slot ``t % 2``
read and ``(t + 1) % 2`` written. The saved gates are stored in the saved buffer's dtype: fp32, or
16 bits (``Plan.half_saved``, the default here with 16-bit weights: fp32 stores beside the 16-bit
loads and stores made Triton 3.6 compute the gates in two register layouts). h_t is stored slice
by slice into ``h_buf[t+1]`` while later slices still read ``h_buf[t]``; the program arrives at the
barrier once, after its last slice. With lengths, a row's h_n and c_n are stored at its last step
and ``h_buf`` holds zeros past its end, as ``lstm_forward_kernel`` publishes them; its c runs on
there, which the backward multiplies by zero gradients only.

Same arguments and outputs as ``lstm_forward_kernel`` (``ops/lstm/kernels.py``, the reference for
the arithmetic), plus ``PIECES``; only its streamed exchange form: weights re-read from L2, h
exchanged through ``h_buf`` (no split operands, no padded rows).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import (_act_sigmoid, _act_tanh, _arrive, _gate_bias, _gradient_in, _load_f32, _previous_h,
                      _program_tile, _release_counters, _row_lengths, _split_gates, _stacked_matmul, _stacked_rows,
                      _transpose_columns, _wait, _where_running)
from .kernels import _cell_step_back, _saved_step


@triton.jit
def _slice(pid_h, p, row_mask, H: tl.constexpr, SLICE: tl.constexpr, PIECES: tl.constexpr):
    """Slice ``p`` of the program's units: ``(units, unit_mask, mask)``."""
    units = (pid_h * PIECES + p) * SLICE + tl.arange(0, SLICE)
    unit_mask = units < H
    return units, unit_mask, unit_mask[:, None] & row_mask[None, :]


@triton.jit
def _program_rows(B, BLOCK_B: tl.constexpr, lengths_ptr, HAS_LENGTHS: tl.constexpr):
    """The program's batch rows: ``(rows, row_mask, lengths, wide_b)``, ``wide_b`` B in int64
    (row indices ``t * B + b`` are formed in int64: ``T * B`` may pass 2^31)."""
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B
    return rows, row_mask, _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS), B.to(tl.int64)


@triton.jit
def _slice_product(pid_h, p, GATES: tl.constexpr, w_hh_ptr, h_src, rows, live, H: tl.constexpr, K_PAD: tl.constexpr,
                   BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                   SLICE: tl.constexpr, BLOCK_B: tl.constexpr, PIECES: tl.constexpr):
    """Slice ``p``'s rows of ``W_hh`` (``GATES`` gates, stacked four high) times every chunk of
    ``h_{t-1}``: the four ``[SLICE, BLOCK_B]`` fp32 gate products (the fourth zero for the GRU)."""
    w_rows, w_valid = _stacked_rows(pid_h * PIECES + p, H, GATES, 4, SLICE)
    acc = _stacked_matmul(0, w_hh_ptr, w_rows, w_valid, h_src, rows, live,
                          tl.zeros([4 * SLICE, BLOCK_B], dtype=tl.float32), H, K_PAD, BLOCK_K, CHUNKS,
                          False, PRECISION, UPCAST)
    return _split_gates(acc, SLICE, BLOCK_B)


@triton.jit
def _slice_planes(pid_h, p, rows, row_mask, H: tl.constexpr, SLICE: tl.constexpr, PIECES: tl.constexpr,
                  GATES: tl.constexpr):
    """Slice ``p`` of a backward's tile: ``(mask, hid, gid)``, its offsets in a ``[B, H]`` plane
    and in a ``[B, GATES * H]`` plane of gate gradients."""
    units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
    return mask, rows[None, :] * H + units[:, None], rows[None, :] * (GATES * H) + units[:, None]


@triton.jit
def _step_published(counter, t, T):
    """Every slice's h_t published at once, then every program's awaited (none after the last step)."""
    if t + 1 < T:
        _arrive(counter)
        _wait(counter, tl.num_programs(0) * (t + 1))


@triton.jit
def _at(plane_rows, units, width: tl.constexpr):
    """Offsets of the tile (``units`` by batch rows) in planes of ``width`` columns, the rows'
    absolute indices ``plane_rows`` (int64: plane t's row b is ``t * B + b``). Formed at each use
    from two vectors (module docstring; compiled for sm_90, the offsets as tiles computed once
    spilled more)."""
    return plane_rows[None, :] * width + units[:, None]


@triton.jit(do_not_specialize=["T", "B"])
def lstm_forward_pieces_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr,
    h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, w_split_ptr, h_split_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, HAS_C0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, PIECES: tl.constexpr,
):
    """``c_buf`` is the ``[T+1, B, H]`` fp32 cell states when ``SAVE``, else a ``[2, B, H]`` fp32
    scratch; ``w_split`` and ``h_split`` are not read (module docstring)."""
    tl.static_assert(not W_RESIDENT and not ON_CHIP and SPLIT_ONCE == 0 and H_STRIDE == H,
                     "pieces: the streamed exchange forward only")
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows, row_mask, lengths, wide_b = _program_rows(B, BLOCK_B, lengths_ptr, HAS_LENGTHS)
    plane_h = wide_b * H
    out_ty = h_buf_ptr.dtype.element_ty
    counter = counters_ptr + tl.program_id(1)
    for p in tl.static_range(PIECES):  # the initial state where the steps read it; T == 0's h_n, c_n
        units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
        hid = _at(rows.to(tl.int64), units, H)
        c = _load_f32(c0_ptr, hid, mask) if HAS_C0 else tl.zeros([SLICE, BLOCK_B], dtype=tl.float32)
        h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else tl.zeros([SLICE, BLOCK_B], dtype=tl.float32)
        tl.store(c_buf_ptr + hid, c, mask=mask)
        if SAVE:
            tl.store(h_buf_ptr + hid, h.to(out_ty), mask=mask)
        tl.store(h_n_ptr + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
        tl.store(c_n_ptr + hid, c.to(c_n_ptr.dtype.element_ty), mask=mask)
    t = 0
    while t < T:
        h_src, live = _previous_h(h_buf_ptr, h0_ptr, t, plane_h, rows, row_mask, HAS_H0)
        row_t = wide_b * t + rows  # step t's rows in x_proj, gates, c_buf; h_buf[t + 1]'s are B on
        # c_{t-1} and c_t: c_buf[t] and c_buf[t + 1] when saving, else the scratch's slots t % 2, (t + 1) % 2
        c_in = row_t if SAVE else wide_b * (t % 2) + rows
        c_out = row_t + B if SAVE else wide_b * ((t + 1) % 2) + rows
        for p in tl.static_range(PIECES):
            units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
            a_i, a_f, a_g, a_o = _slice_product(pid_h, p, 4, w_hh_ptr, h_src, rows, live, H, K_PAD, BLOCK_K, CHUNKS,
                                                PRECISION, UPCAST, SLICE, BLOCK_B, PIECES)
            # (the input projection loaded after the product: not live across it)
            x_g = _at(row_t, units, 4 * H)
            i = _act_sigmoid(a_i + _load_f32(x_proj_ptr, x_g + 0 * H, mask)
                             + _gate_bias(b_ih_ptr, b_hh_ptr, 0 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            f = _act_sigmoid(a_f + _load_f32(x_proj_ptr, x_g + 1 * H, mask)
                             + _gate_bias(b_ih_ptr, b_hh_ptr, 1 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            g = _act_tanh(a_g + _load_f32(x_proj_ptr, x_g + 2 * H, mask)
                          + _gate_bias(b_ih_ptr, b_hh_ptr, 2 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            o = _act_sigmoid(a_o + _load_f32(x_proj_ptr, x_g + 3 * H, mask)
                             + _gate_bias(b_ih_ptr, b_hh_ptr, 3 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            c = f * _load_f32(c_buf_ptr, _at(c_in, units, H), mask) + i * g
            h = o * _act_tanh(c, FAST_ACT)
            # h_t where step t + 1 reads it (h_buf[t + 1]: this step's later slices read h_buf[t]);
            # past a row's end zeros, as lstm_forward_kernel's, and h_n, c_n at its last step
            tl.store(h_buf_ptr + _at(row_t + B, units, H), _where_running(t, lengths, h, 0.0, HAS_LENGTHS).to(out_ty),
                     mask=mask)
            if HAS_LENGTHS:
                last = mask & (lengths == t + 1)[None, :]
                hid = _at(rows.to(tl.int64), units, H)
                tl.store(h_n_ptr + hid, h.to(h_n_ptr.dtype.element_ty), mask=last)
                tl.store(c_n_ptr + hid, c.to(c_n_ptr.dtype.element_ty), mask=last)
            tl.store(c_buf_ptr + _at(c_out, units, H), c, mask=mask)
            if SAVE:
                tl.store(gates_ptr + x_g + 0 * H, i, mask=mask)
                tl.store(gates_ptr + x_g + 1 * H, f, mask=mask)
                tl.store(gates_ptr + x_g + 2 * H, g, mask=mask)
                tl.store(gates_ptr + x_g + 3 * H, o, mask=mask)
        _step_published(counter, t, T)
        t += 1
    if T > 0 and not HAS_LENGTHS:  # h_n and c_n: the last step's, read back (this program's own stores)
        tl.debug_barrier()
        last = wide_b * T + rows if SAVE else wide_b * (T % 2) + rows
        for p in tl.static_range(PIECES):
            units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
            hid = _at(rows.to(tl.int64), units, H)
            h_last = tl.load(h_buf_ptr + _at(wide_b * T + rows, units, H), mask=mask)
            tl.store(h_n_ptr + hid, h_last.to(h_n_ptr.dtype.element_ty), mask=mask)
            c_last = tl.load(c_buf_ptr + _at(last, units, H), mask=mask)
            tl.store(c_n_ptr + hid, c_last.to(c_n_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr)


@triton.jit(do_not_specialize=["T", "B"])
def lstm_backward_pieces_kernel(
    d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr, c_buf_ptr, w_hh_t_ptr, d_gates_ptr, d_h0_ptr, d_c0_ptr,
    lengths_ptr, partials_ptr, counters_ptr, d_state_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr, HAS_D_C_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, GATE_GROUP: tl.constexpr = 0, SPAN_PAD: tl.constexpr = 0, PIECES: tl.constexpr = 1,
):
    """The reverse recurrence of ``lstm_backward_kernel`` (``ops/lstm/kernels.py``, the reference
    for the arithmetic: same arguments and outputs, plus ``d_state`` and ``PIECES``; its streamed
    transpose form only) with the cell's part of a step in slices of units. That kernel holds
    across the step's product the gradients reaching h_t and c_t and, loaded before the grid
    barrier, the next step's output gradient, gates and cell states: nine ``[BLOCK_H, BLOCK_B]``
    fp32 tiles, 576 values a thread at 256 units and 64 rows on 8 warps, which spilled 3.9 KB a
    thread compiled for sm_90 (``results/h200/speed-map/aot-spills``). Here a step first runs each
    slice's cell gradients (its saved values loaded then, stores of its gate gradients and of the
    ``d_c`` reaching c_{t-1}), arrives once, and after the barrier multiplies the whole tile,
    ``dh_{t-1} = d_gates[t] @ W_hh[:, units]`` (an accumulator of one gate's size, or
    ``Plan.gate_split``'s partials), storing it for the next step's slices.

    ``d_state [2, 2, B, H]`` fp32: by step parity (``s % 2`` read, ``(s + 1) % 2`` written) the
    gradients reaching h and c, each program's own units only. With lengths a finished row's
    ``d_h`` is stored there by its slice and kept by the product's store, as the whole-tile kernel
    passes it through."""
    tl.static_assert(not W_RESIDENT and not ON_CHIP, "pieces: the streamed transpose backward only")
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows, row_mask, lengths, wide_b = _program_rows(B, BLOCK_B, lengths_ptr, HAS_LENGTHS)
    plane_h = wide_b * H
    plane_g = wide_b * (4 * H)
    zero = tl.zeros([SLICE, BLOCK_B], dtype=tl.float32)
    for p in tl.static_range(PIECES):  # the gradients reaching h_T and c_T in slot 0 (zeros when absent)
        mask, hid, _planes = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 4)
        tl.store(d_state_ptr + hid, _load_f32(d_h_n_ptr, hid, mask) if HAS_D_H_N else zero, mask=mask)
        tl.store(d_state_ptr + plane_h + hid, _load_f32(d_c_n_ptr, hid, mask) if HAS_D_C_N else zero, mask=mask)
    # the whole tile, for the product
    _pid_h, _pid_b, units, _rows, unit_mask, _row_mask, tile_mask, tile = _program_tile(B, H, BLOCK_B, BLOCK_H)
    s = 0
    while s < T:
        t = T - 1 - s
        dg_t = d_gates_ptr + t * plane_g
        state_in = d_state_ptr + (s % 2) * (2 * plane_h)
        state_out = d_state_ptr + ((s + 1) % 2) * (2 * plane_h)
        tl.debug_barrier()  # this program's stores of d_state (the start's, the last product's) seen by all its threads
        for p in tl.static_range(PIECES):
            mask, hid, gid = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 4)
            d_out, i, f, g, o, c, c_prev = _saved_step(t, d_out_ptr, gates_ptr, c_buf_ptr, hid, gid, mask,
                                                       plane_h, plane_g, H, HAS_D_OUT)
            d_h, d_h_cell = _gradient_in(t, lengths, _load_f32(state_in, hid, mask), d_out, zero, HAS_LENGTHS)
            d_c = _load_f32(state_in + plane_h, hid, mask)
            d_c_cell = _where_running(t, lengths, d_c, zero, HAS_LENGTHS)
            _, _, _, _, d_c_prev = _cell_step_back(d_h_cell, d_c_cell, i, f, g, o, c, c_prev, dg_t, gid, mask, H)
            tl.store(state_out + plane_h + hid, _where_running(t, lengths, d_c_prev, d_c, HAS_LENGTHS), mask=mask)
            if HAS_LENGTHS:  # (a finished row's d_h, for h_{t-1} unchanged: read back after the product)
                tl.store(state_out + hid, d_h, mask=mask)
        _arrive(counters_ptr + tl.program_id(1))  # our gate gradients published
        # dh_{t-1} = d_gates[t] @ W_hh[:, our units], after the barrier (_transpose_columns waits)
        d_h_rec = _transpose_columns(tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32), 0, w_hh_t_ptr, units,
                                     unit_mask, dg_t, rows, row_mask, partials_ptr, counters_ptr, s, plane_h, tile,
                                     tile_mask, H, 4, GATE_GROUP, BLOCK_H, SPAN_PAD, K_PAD, BLOCK_K, W_RESIDENT,
                                     PRECISION, UPCAST)
        if HAS_LENGTHS:
            d_h_rec = _where_running(t, lengths, d_h_rec, _load_f32(state_out, tile, tile_mask), HAS_LENGTHS)
        tl.store(state_out + tile, d_h_rec, mask=tile_mask)
        s += 1
    tl.debug_barrier()  # d_h0, d_c0: the last slot (d_h_n's and d_c_n's when T is 0), this program's own stores
    last = d_state_ptr + (T % 2) * (2 * plane_h)
    for p in tl.static_range(PIECES):
        mask, hid, _planes = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 4)
        tl.store(d_h0_ptr + hid, tl.load(last + hid, mask=mask).to(d_h0_ptr.dtype.element_ty), mask=mask)
        tl.store(d_c0_ptr + hid, tl.load(last + plane_h + hid, mask=mask).to(d_c0_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr, GATE_GROUP)
