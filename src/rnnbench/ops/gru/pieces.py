"""The GRU's streamed forward and transpose backward with their steps in slices of units
(:attr:`Plan.pieces`); the backward's is ``gru_backward_pieces_kernel``'s docstring.

The LSTM's (``ops/lstm/pieces.py``, which says why and what was measured) for the GRU: each
slice's product (its rows of ``W_hh``, three gates and the stacked tile's zero fourth, against
every chunk of ``h_{t-1}``), gates and update ``h_t = n + z (h_{t-1} - n)``, then the next slice.
``gru_forward_kernel`` (``ops/gru/kernels.py``, the reference for the arithmetic) carries its
units' h in fp32 across steps; here that fp32 h lives in memory between steps, ``h_state [2, B,
H]``, slot ``t % 2`` read and ``(t + 1) % 2`` written, so the update reads what the whole-tile
kernel holds, not the output's rounding of it. With lengths a finished row keeps its h there and
``h_buf`` holds zeros past its end; ``h_n`` is the last slot, read back after the loop.

Its arguments are ``gru_forward_kernel``'s with ``h_state`` in place of the split operands' copies
(``w_split``, ``h_split``: none here), plus ``PIECES``; only the streamed exchange form.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import (_act_sigmoid, _act_tanh, _arrive, _gate_bias, _gradient_in, _load_f32, _previous_h,
                      _program_tile, _release_counters, _transpose_columns, _where_running)
from ..lstm.pieces import _at, _program_rows, _slice, _slice_planes, _slice_product, _step_published
from .kernels import _cell_step_back, _saved_step


@triton.jit(do_not_specialize=["T", "B"])
def gru_forward_pieces_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr,
    h_buf_ptr, h_n_ptr, saved_ptr, h_state_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, PIECES: tl.constexpr,
):
    """``h_state``: fp32 ``[2, B, H]`` (module docstring); ``saved [T, B, 4H]`` r, z, n, hn when
    ``SAVE``, as ``gru_forward_kernel``'s, in fp32 or the weights' dtype (``Plan.half_saved``: the
    stores cast to the pointer's type)."""
    tl.static_assert(not W_RESIDENT and not ON_CHIP and SPLIT_ONCE == 0 and H_STRIDE == H,
                     "pieces: the streamed exchange forward only")
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows, row_mask, lengths, wide_b = _program_rows(B, BLOCK_B, lengths_ptr, HAS_LENGTHS)
    plane_h = wide_b * H
    out_ty = h_buf_ptr.dtype.element_ty
    counter = counters_ptr + tl.program_id(1)
    for p in tl.static_range(PIECES):  # h0 where the steps read it (slot 0), and h_buf[0] when saving
        units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
        hid = _at(rows.to(tl.int64), units, H)
        h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else tl.zeros([SLICE, BLOCK_B], dtype=tl.float32)
        tl.store(h_state_ptr + hid, h, mask=mask)
        if SAVE:
            tl.store(h_buf_ptr + hid, h.to(out_ty), mask=mask)
    t = 0
    while t < T:
        h_src, live = _previous_h(h_buf_ptr, h0_ptr, t, plane_h, rows, row_mask, HAS_H0)
        row_t = wide_b * t + rows  # step t's rows in x_proj and saved; h_buf[t + 1]'s are B on
        h_in = wide_b * (t % 2) + rows  # h_{t-1} and h_t in h_state's slots t % 2, (t + 1) % 2
        h_out = wide_b * ((t + 1) % 2) + rows
        for p in tl.static_range(PIECES):
            units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
            a_r, a_z, a_n, _ = _slice_product(pid_h, p, 3, w_hh_ptr, h_src, rows, live, H, K_PAD, BLOCK_K, CHUNKS,
                                              PRECISION, UPCAST, SLICE, BLOCK_B, PIECES)
            # (the input projection loaded after the product: not live across it)
            x_g = _at(row_t, units, 3 * H)
            r = _act_sigmoid(a_r + _load_f32(x_proj_ptr, x_g + 0 * H, mask)
                             + _gate_bias(b_ih_ptr, b_hh_ptr, 0 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            z = _act_sigmoid(a_z + _load_f32(x_proj_ptr, x_g + 1 * H, mask)
                             + _gate_bias(b_ih_ptr, b_hh_ptr, 1 * H + units, unit_mask, HAS_BIAS, True), FAST_ACT)
            hn = a_n + _gate_bias(b_hh_ptr, b_ih_ptr, 2 * H + units, unit_mask, HAS_BIAS, False)  # b_hn
            n = _act_tanh(_load_f32(x_proj_ptr, x_g + 2 * H, mask)
                          + _gate_bias(b_ih_ptr, b_hh_ptr, 2 * H + units, unit_mask, HAS_BIAS, False)  # b_in
                          + r * hn, FAST_ACT)
            h_prev = _load_f32(h_state_ptr, _at(h_in, units, H), mask)
            h = _where_running(t, lengths, n + z * (h_prev - n), h_prev, HAS_LENGTHS)
            # h_t where step t + 1 reads it (h_buf[t + 1]: this step's later slices read h_buf[t]);
            # past a row's end zeros, as gru_forward_kernel publishes them
            tl.store(h_buf_ptr + _at(row_t + B, units, H), _where_running(t, lengths, h, 0.0, HAS_LENGTHS).to(out_ty),
                     mask=mask)
            tl.store(h_state_ptr + _at(h_out, units, H), h, mask=mask)
            if SAVE:
                s_g = _at(row_t, units, 4 * H)
                tl.store(saved_ptr + s_g + 0 * H, r, mask=mask)
                tl.store(saved_ptr + s_g + 1 * H, z, mask=mask)
                tl.store(saved_ptr + s_g + 2 * H, n, mask=mask)
                tl.store(saved_ptr + s_g + 3 * H, hn, mask=mask)
        _step_published(counter, t, T)
        t += 1
    tl.debug_barrier()  # h_n: the last slot (h0's when T is 0; a finished row's kept h), this program's own stores
    last = wide_b * (T % 2) + rows
    for p in tl.static_range(PIECES):
        units, unit_mask, mask = _slice(pid_h, p, row_mask, H, SLICE, PIECES)
        h_last = tl.load(h_state_ptr + _at(last, units, H), mask=mask)
        tl.store(h_n_ptr + _at(rows.to(tl.int64), units, H), h_last.to(h_n_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr)


@triton.jit(do_not_specialize=["T", "B"])
def gru_backward_pieces_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, w_hh_t_ptr, d_gates_h_ptr, d_gates_x_ptr, d_h0_ptr,
    lengths_ptr, partials_ptr, counters_ptr, d_state_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, GATE_GROUP: tl.constexpr = 0, SPAN_PAD: tl.constexpr = 0, PIECES: tl.constexpr = 1,
):
    """``gru_backward_kernel`` (``ops/gru/kernels.py``, the reference for the arithmetic) with the
    cell's part of a step in slices of units, as ``lstm_backward_pieces_kernel`` is the LSTM's
    (``ops/lstm/pieces.py``, which says why): same arguments and outputs plus ``d_state`` and
    ``PIECES``. ``d_state [2, B, H]`` fp32, by step parity: the gradient reaching h. A slice stores
    there its part of ``dh_{t-1}`` through the z gate (``d_h * z``; a finished row's ``d_h``), which
    the product after the barrier starts from."""
    tl.static_assert(not W_RESIDENT and not ON_CHIP, "pieces: the streamed transpose backward only")
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows, row_mask, lengths, wide_b = _program_rows(B, BLOCK_B, lengths_ptr, HAS_LENGTHS)
    plane_h = wide_b * H
    plane_g = wide_b * (3 * H)
    plane_s = wide_b * (4 * H)  # (the saved activations' [B, 4H] planes)
    zero = tl.zeros([SLICE, BLOCK_B], dtype=tl.float32)
    for p in tl.static_range(PIECES):  # the gradient reaching h_T in slot 0 (zeros when absent)
        mask, hid, _planes = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 3)
        tl.store(d_state_ptr + hid, _load_f32(d_h_n_ptr, hid, mask) if HAS_D_H_N else zero, mask=mask)
    # the whole tile, for the product
    _pid_h, _pid_b, units, _rows, unit_mask, _row_mask, tile_mask, tile = _program_tile(B, H, BLOCK_B, BLOCK_H)
    s = 0
    while s < T:
        t = T - 1 - s
        dg_t = d_gates_h_ptr + t * plane_g
        state_in = d_state_ptr + (s % 2) * plane_h
        state_out = d_state_ptr + ((s + 1) % 2) * plane_h
        tl.debug_barrier()  # this program's stores of d_state (the start's, the last product's) seen by all its threads
        for p in tl.static_range(PIECES):
            mask, hid, gid = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 3)
            sid = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 4)[2]  # (the saved values' [B, 4H] plane)
            d_out, r, z, n, hn, h_prev = _saved_step(t, d_out_ptr, saved_ptr, h_buf_ptr, hid, sid, mask, plane_h,
                                                     plane_s, H, HAS_D_OUT)
            d_h, d_h_cell = _gradient_in(t, lengths, _load_f32(state_in, hid, mask), d_out, zero, HAS_LENGTHS)
            _, _, _, direct = _cell_step_back(d_h_cell, r, z, n, hn, h_prev, dg_t, d_gates_x_ptr + t * plane_g, gid,
                                              mask, H)
            tl.store(state_out + hid, _where_running(t, lengths, direct, d_h, HAS_LENGTHS), mask=mask)
        _arrive(counters_ptr + tl.program_id(1))  # our gate gradients published
        # dh_{t-1} = direct + d_gates[t] @ W_hh[:, our units], after the barrier (_transpose_columns waits)
        start = _load_f32(state_out, tile, tile_mask)
        d_h_rec = _transpose_columns(start, 0, w_hh_t_ptr, units, unit_mask, dg_t, rows, row_mask, partials_ptr,
                                     counters_ptr, s, plane_h, tile, tile_mask, H, 3, GATE_GROUP, BLOCK_H, SPAN_PAD,
                                     K_PAD, BLOCK_K, W_RESIDENT, PRECISION, UPCAST)
        d_h_rec = _where_running(t, lengths, d_h_rec, start, HAS_LENGTHS)  # a finished row's passes through
        tl.store(state_out + tile, d_h_rec, mask=tile_mask)
        s += 1
    tl.debug_barrier()  # d_h0: the last slot (d_h_n's when T is 0), this program's own stores
    last = d_state_ptr + (T % 2) * plane_h
    for p in tl.static_range(PIECES):
        mask, hid, _planes = _slice_planes(pid_h, p, rows, row_mask, H, SLICE, PIECES, 3)
        tl.store(d_h0_ptr + hid, tl.load(last + hid, mask=mask).to(d_h0_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr, GATE_GROUP)
