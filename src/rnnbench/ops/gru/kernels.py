"""GRU recurrence kernels: one launch runs every time step of one layer and direction.

Gates r, z, n (torch.nn order) with the reset gate applied after the recurrent matmul, as cuDNN
and torch.nn do. ``x_proj = x W_ih^T`` (all steps, one matmul outside); the biases are added
here, ``b_hn`` inside the reset product::

    r = sigmoid(xr + b_ir + b_hr + W_hr h)   z = sigmoid(xz + b_iz + b_hz + W_hz h)
    hn = W_hn h + b_hn   n = tanh(xn + b_in + r hn)   h_t = (1 - z) n + z h_{t-1}

Tiles are ``[BLOCK_H, BLOCK_B]`` (see ``ops/common.py``); the stacked weight tile has four gate
blocks, the fourth zero. Buffers (contiguous): ``x_proj [T, B, 3H]``; ``h_buf [T+1, B, H]``, step
t writes ``h_buf[t+1]``, ``h_buf[0]`` (h0) only when saving; ``saved [T, B, 4H]`` fp32 holding r, z,
n, hn for backward.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import (_act_sigmoid, _act_tanh, _arrive, _back_tile, _dropped, _exchange_offsets, _forward_weights,
                      _gate_bias, _gate_columns, _gradient_in, _hat, _load_f32, _load_weight_columns, _normed,
                      _on_chip_columns, _program_tile, _publish_h, _recurrent_matmul, _release_counters,
                      _resident_stack_t, _row_lengths, _shared_norm_back, _split_gates, _split_h0, _split_k_arrive,
                      _split_k_sum, _stack_gates, _stacked_rows, _step_moments, _transpose_columns, _wait,
                      _where_running)


@triton.jit(do_not_specialize=["T", "B"])
def gru_forward_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, drop_ptr, h0_drop_ptr, ln_ih_ptr, ln_hh_ptr,
    ln_hat_ptr, ln_rstd_ptr, ln_part_ptr, h_buf_ptr, y_ptr, h_n_ptr, saved_ptr, w_split_ptr, h_split_ptr,
    counters_ptr,
    T, B,
    H: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, DROP: tl.constexpr = False, LN: tl.constexpr = False,
):
    """``HAS_LENGTHS``: a variable-length batch (``lengths [B]`` int32), as the LSTM's forward.
    ``DROP``: recurrent dropout, as the LSTM's forward, but ``z * h_{t-1}`` takes h itself, and
    with ``SAVE`` ``y [T+1, B, H]`` holds h0 too (the backward's ``h_{t-1}``). ``LN``: layer norm,
    as the LSTM's forward (across programs ``ln_part [2, programs, 2, B]``, one barrier a step for
    both norms): each step's ``x_proj`` row and the product normalized over
    their 3H values, times ``ln_ih``, ``ln_hh`` (``[3H]``), plus ``b_ih``, ``b_hh`` (``b_hn`` inside
    ``r * (.)`` as ever, so the saved ``hn`` is the normalized product's n plus ``b_hn``); saving,
    ``ln_hat [T, B, 3H]`` and ``ln_rstd [T, B]`` as the LSTM's (:func:`gru_backward_kernel`)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    STEP_BARRIERS: tl.constexpr = 2 if LN and not ON_CHIP else 1  # (h's exchange, the norms' across programs)
    gid = rows[None, :] * (3 * H) + units[:, None]  # gate r of a [B, 3H] plane
    sid = rows[None, :] * (4 * H) + units[:, None]  # r of a [B, 4H] saved plane
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (3 * H)
    plane_s = B.to(tl.int64) * (4 * H)
    out_ty = h_buf_ptr.dtype.element_ty

    w_rows, w_valid = _stacked_rows(pid_h, H, 3, 4, BLOCK_H)
    w_plane = 3 * H * H  # one [3H, H] plane of W_hh's split copy
    plane_e, hid_e, mask_e = _exchange_offsets(B, plane_h, hid, mask, rows, row_mask, units, H, H_STRIDE)
    w, w_src, w_scale = _forward_weights(w_hh_ptr, w_split_ptr, w_plane, w_rows, w_valid, H, BLOCK_K, CHUNKS,
                                         W_RESIDENT, SPLIT_ONCE, K_PAD, BLOCK_B, H_STRIDE)
    # b_hh + b_ih (layer norm: each the shift of its own norm, added after it all the same)
    bias_r = _gate_bias(b_hh_ptr, b_ih_ptr, 0 * H + units, unit_mask, HAS_BIAS, True)
    bias_z = _gate_bias(b_hh_ptr, b_ih_ptr, 1 * H + units, unit_mask, HAS_BIAS, True)
    bias_xn = _gate_bias(b_ih_ptr, b_hh_ptr, 2 * H + units, unit_mask, HAS_BIAS, False)  # b_in
    bias_hn = _gate_bias(b_hh_ptr, b_ih_ptr, 2 * H + units, unit_mask, HAS_BIAS, False)  # b_hn
    zero = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
    h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else zero  # fp32 copy of our slice of h, carried across steps
    drop = _load_f32(drop_ptr, hid, mask) if DROP else zero
    h_rec = _dropped(h, drop, DROP)  # what the recurrent product reads
    barriers, h_scales, h_inv = _split_h0(h_rec, h0_drop_ptr, h_split_ptr, plane_e, hid_e, rows, row_mask, mask_e,
                                          counters_ptr + pid_b, H, K_PAD, BLOCK_K, HAS_H0, SPLIT_ONCE, True)
    if SAVE:
        tl.store(h_buf_ptr + hid, h_rec.to(out_ty), mask=mask)
        if DROP:  # (h_{t-1} as the backward's z reads it)
            tl.store(y_ptr + hid, h.to(out_ty), mask=mask)
    x_r = _load_f32(x_proj_ptr, gid + 0 * H, mask)
    x_z = _load_f32(x_proj_ptr, gid + 1 * H, mask)
    x_n = _load_f32(x_proj_ptr, gid + 2 * H, mask)
    t = 0
    while t < T:
        acc = _recurrent_matmul(w, h_rec, w_src, w_rows, w_valid, h_buf_ptr, h0_drop_ptr, h_split_ptr, w_plane, t,
                                plane_h, rows, row_mask,
                                tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32), H, K_PAD, BLOCK_K, CHUNKS,
                                W_RESIDENT, ON_CHIP, HAS_H0, PRECISION, UPCAST, SPLIT_ONCE, w_scale, h_scales,
                                plane_e, H_STRIDE)
        a_r, a_z, a_n, _ = _split_gates(acc, BLOCK_H, BLOCK_B)
        if LN:
            mean, rstd, x_mean, x_rstd = _step_moments(
                a_r, a_z, a_n, a_n, x_r, x_z, x_n, x_n, unit_mask[:, None], ln_part_ptr, counters_ptr + pid_b,
                tl.num_programs(0) * (barriers + t * STEP_BARRIERS + 1), pid_h, rows, row_mask, B, 3, H, BLOCK_H,
                K_PAD, ON_CHIP)
            if SAVE:
                hat_t = ln_hat_ptr + t * plane_g
                tl.store(hat_t + gid + 0 * H, _hat(a_r, mean, rstd, unit_mask[:, None]), mask=mask)
                tl.store(hat_t + gid + 1 * H, _hat(a_z, mean, rstd, unit_mask[:, None]), mask=mask)
                tl.store(hat_t + gid + 2 * H, _hat(a_n, mean, rstd, unit_mask[:, None]), mask=mask)
                tl.store(ln_rstd_ptr + t * B + rows[None, :], rstd, mask=row_mask[None, :])
            a_r = _normed(a_r, mean, rstd, ln_hh_ptr, 0 * H + units, unit_mask)
            a_z = _normed(a_z, mean, rstd, ln_hh_ptr, 1 * H + units, unit_mask)
            a_n = _normed(a_n, mean, rstd, ln_hh_ptr, 2 * H + units, unit_mask)
            x_r = _normed(x_r, x_mean, x_rstd, ln_ih_ptr, 0 * H + units, unit_mask)
            x_z = _normed(x_z, x_mean, x_rstd, ln_ih_ptr, 1 * H + units, unit_mask)
            x_n = _normed(x_n, x_mean, x_rstd, ln_ih_ptr, 2 * H + units, unit_mask)
        r = _act_sigmoid(a_r + x_r + bias_r, FAST_ACT)
        z = _act_sigmoid(a_z + x_z + bias_z, FAST_ACT)
        hn = a_n + bias_hn
        n = _act_tanh(x_n + bias_xn + r * hn, FAST_ACT)
        h = _where_running(t, lengths, n + z * (h - n), h, HAS_LENGTHS)
        h_rec = _dropped(h, drop, DROP)
        # h published: arrive now, store and load the rest, then wait
        _publish_h(_where_running(t, lengths, h_rec, zero, HAS_LENGTHS), h_buf_ptr, h_split_ptr, t, T, plane_h, hid,
                   mask, counters_ptr + pid_b, ON_CHIP, SPLIT_ONCE, h_inv, plane_e, hid_e, mask_e,
                   H_STRIDE != H)
        if DROP:  # the output, apart from the exchange's dropped h
            tl.store(y_ptr + (t + 1) * plane_h + hid, _where_running(t, lengths, h, zero, HAS_LENGTHS).to(out_ty),
                     mask=mask)
        if SAVE:
            s_t = saved_ptr + t * plane_s
            tl.store(s_t + sid + 0 * H, r, mask=mask)
            tl.store(s_t + sid + 1 * H, z, mask=mask)
            tl.store(s_t + sid + 2 * H, n, mask=mask)
            tl.store(s_t + sid + 3 * H, hn, mask=mask)
        if t + 1 < T:
            x_t = x_proj_ptr + (t + 1) * plane_g
            x_r = _load_f32(x_t, gid + 0 * H, mask)
            x_z = _load_f32(x_t, gid + 1 * H, mask)
            x_n = _load_f32(x_t, gid + 2 * H, mask)
            if not ON_CHIP:
                _wait(counters_ptr + pid_b, tl.num_programs(0) * ((t + 1) * STEP_BARRIERS + barriers))
        t += 1
    tl.store(h_n_ptr + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr)


@triton.jit
def _saved_step(t, d_out_ptr, saved_ptr, h_buf_ptr, hid, sid, mask, plane_h, plane_s, H: tl.constexpr,
                HAS_D_OUT: tl.constexpr):
    """Backward step t's own inputs: output gradient, r, z, n, hn and h_{t-1} (fp32)."""
    if HAS_D_OUT:
        d_out = _load_f32(d_out_ptr + t * plane_h, hid, mask)
    else:
        d_out = tl.zeros(hid.shape, dtype=tl.float32)
    s_t = saved_ptr + t * plane_s
    r = _load_f32(s_t, sid + 0 * H, mask)
    z = _load_f32(s_t, sid + 1 * H, mask)
    n = _load_f32(s_t, sid + 2 * H, mask)
    hn = _load_f32(s_t, sid + 3 * H, mask)
    h_prev = _load_f32(h_buf_ptr + t * plane_h, hid, mask)
    return d_out, r, z, n, hn, h_prev


@triton.jit
def _back_start(T, d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, hid, sid, mask, plane_h, plane_s, H: tl.constexpr,
                HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr):
    """Before a backward kernel's first step: a zero tile, the gradient reaching h_T from past the
    sequence (zeros when absent) and step T-1's saved values (:func:`_saved_step`).
    Returns ``(zero, d_h, d_out, r, z, n, hn, h_prev)``, fp32 ``[BLOCK_H, BLOCK_B]``."""
    zero = tl.zeros(hid.shape, dtype=tl.float32)
    d_h = _load_f32(d_h_n_ptr, hid, mask) if HAS_D_H_N else zero
    d_out, r, z, n, hn, h_prev = _saved_step(T - 1, d_out_ptr, saved_ptr, h_buf_ptr, hid, sid, mask, plane_h,
                                             plane_s, H, HAS_D_OUT)
    return zero, d_h, d_out, r, z, n, hn, h_prev


@triton.jit
def _cell_step_back(d_h, r, z, n, hn, h_prev, dg_t, dx_t, gid, mask, H: tl.constexpr):
    """One reverse step of the cell for this program's tile: from ``d_h`` (the gradient reaching
    h_t), the gradients of the recurrent pre-activations, stored at ``dg_t``, and of the input-side
    ones (n without the factor r), stored at ``dx_t`` (the ``[B, 3H]`` planes of step t), in their
    dtype. Returns ``(d_r, d_z, d_hn, direct)``: the recurrent ones in that dtype (the operands of
    the recurrent matmul) and ``direct``, the fp32 part of ``dh_{t-1}`` through the z gate."""
    d_r, d_z, d_hn, d_n, direct = _cell_grads(d_h, r, z, n, hn, h_prev, dg_t.dtype.element_ty)
    _store_grads(dg_t, dx_t, gid, mask, H, d_r, d_z, d_hn, d_n)
    return d_r, d_z, d_hn, direct


@triton.jit
def _cell_grads(d_h, r, z, n, hn, h_prev, out_ty: tl.constexpr):
    """:func:`_cell_step_back` without the stores: ``(d_r, d_z, d_hn, d_n, direct)``, the first
    four in ``out_ty``."""
    d_n = d_h * (1.0 - z) * (1.0 - n * n)  # through tanh: gradient of n's pre-activation
    d_z = d_h * (h_prev - n) * z * (1.0 - z)
    d_r = d_n * hn * r * (1.0 - r)
    # h_{t-1} also reaches h_t directly through the z gate
    return d_r.to(out_ty), d_z.to(out_ty), (d_n * r).to(out_ty), d_n.to(out_ty), d_h * z


@triton.jit
def _store_grads(dg_t, dx_t, gid, mask, H: tl.constexpr, d_r, d_z, d_hn, d_n):
    """The recurrent pre-activation gradients into ``dg_t``, the input-side ones into ``dx_t``."""
    tl.store(dg_t + gid + 0 * H, d_r, mask=mask)
    tl.store(dg_t + gid + 1 * H, d_z, mask=mask)
    tl.store(dg_t + gid + 2 * H, d_hn, mask=mask)
    tl.store(dx_t + gid + 0 * H, d_r, mask=mask)
    tl.store(dx_t + gid + 1 * H, d_z, mask=mask)
    tl.store(dx_t + gid + 2 * H, d_n, mask=mask)


@triton.jit(do_not_specialize=["T", "B"])
def gru_backward_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, w_hh_t_ptr, d_gates_h_ptr, d_gates_x_ptr, d_h0_ptr,
    lengths_ptr, drop_ptr, ln_hat_ptr, ln_rstd_ptr, ln_hh_ptr, d_raw_ptr, ln_part_ptr, partials_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, GATE_GROUP: tl.constexpr = 0, SPAN_PAD: tl.constexpr = 0, DROP: tl.constexpr = False,
    LN: tl.constexpr = False,
):
    """Reverse-time recurrence. Writes ``d_gates_h [T, B, 3H]``, the gradients of the recurrent
    pre-activations ``(W_hr h, W_hz h, W_hn h + b_hn)``, and ``d_gates_x [T, B, 3H]``, those of
    the input-side ones ``(W_ir x, W_iz x, W_in x)``: the same r and z, but n without the factor r.
    Both in the weights' dtype, written here so that no copy joins them afterwards; and ``d_h0``.
    ``w_hh_t`` is ``W_hh^T`` (``[H, 3H]``, contiguous). ``HAS_LENGTHS``, ``GATE_GROUP``: as the
    LSTM's backward. ``DROP``: the forward's recurrent dropout: the product's gradient times
    ``drop [B, H]`` before the direct path through z joins it; ``h_buf`` is then the forward's
    ``y`` (``h_{t-1}`` itself, for z's gradient). ``LN``: the forward's layer norm (``ON_CHIP``), from
    what it saved (``ln_hat``, ``ln_rstd``) and the recurrent gain ``ln_hh [3H]``: ``d_gates_h``
    holds the gradients of the normalized product's gates (n's times r: the biases' and gains'),
    ``d_raw [T, B, 3H]`` those of the product before its norm (``W_hh``'s, and what ``dh_{t-1}``
    is formed from, beside the direct path through z). On the transpose plan a row's sums are
    gathered from every program's share (``ln_part [1, programs, 2, B]`` fp32, a grid barrier before
    the step's exchange of ``d_raw``), as the LSTM's backward."""
    tl.static_assert(not LN or GATE_GROUP == 0, "layer norm: the transpose plan's every gate a program")
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid, gid, plane_h, plane_g = _back_tile(B, H, BLOCK_B,
                                                                                                  BLOCK_H, 3)
    STEP_BARRIERS: tl.constexpr = 2 if LN and not ON_CHIP else 1  # (d_raw's exchange, the norm's across programs)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    sid = rows[None, :] * (4 * H) + units[:, None]  # the saved activations' [B, 4H] plane
    plane_s = B.to(tl.int64) * (4 * H)
    drop = _load_f32(drop_ptr, hid, mask) if DROP else 0.0
    valid = unit_mask[:, None]
    if LN:
        gain_r = _load_f32(ln_hh_ptr, 0 * H + units, unit_mask)[:, None]
        gain_z = _load_f32(ln_hh_ptr, 1 * H + units, unit_mask)[:, None]
        gain_n = _load_f32(ln_hh_ptr, 2 * H + units, unit_mask)[:, None]

    if ON_CHIP:
        w = _gate_columns(w_hh_t_ptr, units, unit_mask, H, 3, K_PAD)
    elif W_RESIDENT:
        w = _load_weight_columns(w_hh_t_ptr, units, unit_mask, 0, H, 3, K_PAD, 4 * K_PAD)
    else:
        w = 0
    zero, d_h_rec, d_out, r, z, n, hn, h_prev = _back_start(T, d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, hid, sid,
                                                            mask, plane_h, plane_s, H, HAS_D_OUT, HAS_D_H_N)
    s = 0
    while s < T:
        t = T - 1 - s
        dg_t = d_gates_h_ptr + t * plane_g
        d_h, d_h_cell = _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS)
        if LN:
            out_ty = dg_t.dtype.element_ty
            d_r, d_z, d_hn, d_n, direct = _cell_grads(d_h_cell, r, z, n, hn, h_prev, tl.float32)
            _store_grads(dg_t, d_gates_x_ptr + t * plane_g, gid, mask, H, d_r.to(out_ty), d_z.to(out_ty),
                         d_hn.to(out_ty), d_n.to(out_ty))
            # through the recurrent product's norm: the gradient before it (W_hh's, and dh_{t-1}'s)
            hat_t = ln_hat_ptr + t * plane_g
            rstd = tl.load(ln_rstd_ptr + t * B + rows[None, :], mask=row_mask[None, :], other=0.0)
            hat_n = _load_f32(hat_t, gid + 2 * H, mask)
            d_r, d_z, d_hn, _ = _shared_norm_back(
                d_r * gain_r, d_z * gain_z, d_hn * gain_n, d_hn, _load_f32(hat_t, gid + 0 * H, mask),
                _load_f32(hat_t, gid + 1 * H, mask), hat_n, hat_n, rstd, valid, ln_part_ptr, 0, counters_ptr + pid_b,
                tl.num_programs(0) * (s * STEP_BARRIERS + 1), pid_h, rows, row_mask, B, 3, H, BLOCK_H, K_PAD, ON_CHIP)
            d_r, d_z, d_hn = d_r.to(out_ty), d_z.to(out_ty), d_hn.to(out_ty)
            raw_t = d_raw_ptr + t * plane_g
            tl.store(raw_t + gid + 0 * H, d_r, mask=mask)
            tl.store(raw_t + gid + 1 * H, d_z, mask=mask)
            tl.store(raw_t + gid + 2 * H, d_hn, mask=mask)
        else:
            d_r, d_z, d_hn, direct = _cell_step_back(d_h_cell, r, z, n, hn, h_prev, dg_t,
                                                     d_gates_x_ptr + t * plane_g, gid, mask, H)
        if not ON_CHIP:  # our gate gradients published: arrive, then the next step's loads, then wait
            _arrive(counters_ptr + pid_b)
        if s + 1 < T:
            d_out, r, z, n, hn, h_prev = _saved_step(t - 1, d_out_ptr, saved_ptr, h_buf_ptr, hid, sid, mask,
                                                     plane_h, plane_s, H, HAS_D_OUT)
        # (the direct path through z is the product's starting value, or with DROP added after it)
        start = zero if DROP else direct
        if ON_CHIP:
            d_h_rec = _on_chip_columns(w, (d_r, d_z, d_hn), start, 3, PRECISION, UPCAST)
        else:
            d_h_rec = _transpose_columns(start, w, w_hh_t_ptr, units, unit_mask,
                                         d_raw_ptr + t * plane_g if LN else dg_t, rows, row_mask, partials_ptr,
                                         counters_ptr, s, plane_h, hid, mask, H, 3, GATE_GROUP, BLOCK_H, SPAN_PAD,
                                         K_PAD, BLOCK_K, W_RESIDENT, PRECISION, UPCAST, STEP_BARRIERS)
        if DROP:
            d_h_rec = direct + d_h_rec * drop
        d_h_rec = _where_running(t, lengths, d_h_rec, d_h, HAS_LENGTHS)  # a finished row's passes through
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr, GATE_GROUP)


@triton.jit(do_not_specialize=["T", "B"])
def gru_backward_split_k_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, w_hh_ptr, d_gates_h_ptr, d_gates_x_ptr, d_h0_ptr, lengths_ptr,
    drop_ptr, partials_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, DROP: tl.constexpr = False,
):
    """Reverse-time recurrence on the forward's split (``Plan.split_k``; see
    ``lstm_backward_split_k_kernel``): each program's share of every unit's ``dh_{t-1}`` is
    ``W_stack^T`` (its own rows of W_hh, the fourth gate block zeros) times its own units' recurrent
    gate gradients ``(d_r, d_z, d_hn)``, summed by the units' owners after the barrier, plus the
    owner's direct path through z. Same outputs as :func:`gru_backward_kernel` (``DROP`` too);
    ``w_hh`` is ``W_hh`` itself (``[3H, H]``)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid, gid, plane_h, plane_g = _back_tile(B, H, BLOCK_B,
                                                                                                  BLOCK_H, 3)
    sid = rows[None, :] * (4 * H) + units[:, None]  # the saved activations' [B, 4H] plane
    plane_s = B.to(tl.int64) * (4 * H)
    programs: tl.constexpr = (H + BLOCK_H - 1) // BLOCK_H  # per batch block: tl.num_programs(0)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    drop = _load_f32(drop_ptr, hid, mask) if DROP else 0.0
    # the partials' [B, H_STRIDE] planes, rows padded to 16 bytes where H is not a multiple of 8
    plane_p, hid_p, mask_p = _exchange_offsets(B, plane_h, hid, mask, rows, row_mask, units, H, H_STRIDE)

    w_rows, w_valid = _stacked_rows(pid_h, H, 3, 4, BLOCK_H)
    if W_RESIDENT:
        w = _resident_stack_t(w_hh_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS)
    else:
        w = 0
    zero, d_h_rec, d_out, r, z, n, hn, h_prev = _back_start(T, d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, hid, sid,
                                                            mask, plane_h, plane_s, H, HAS_D_OUT, HAS_D_H_N)
    s = 0
    while s < T:
        t = T - 1 - s
        d_h, d_h_cell = _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS)
        d_r, d_z, d_hn, d_n, direct = _cell_grads(d_h_cell, r, z, n, hn, h_prev, d_gates_h_ptr.dtype.element_ty)
        grads = _stack_gates(d_r, d_z, d_hn, zero.to(d_r.dtype), BLOCK_H, BLOCK_B)  # fourth block: no gate
        # The partials published first; the gate gradients (no other program reads them) and the
        # next step's saved values after the arrival, before the wait.
        _split_k_arrive(w, w_hh_ptr, w_rows, w_valid, grads, partials_ptr, s, programs, counters_ptr + pid_b,
                        plane_p, rows, row_mask, H, BLOCK_K, CHUNKS, W_RESIDENT, PRECISION, UPCAST, H_STRIDE)
        _store_grads(d_gates_h_ptr + t * plane_g, d_gates_x_ptr + t * plane_g, gid, mask, H, d_r, d_z, d_hn, d_n)
        if s + 1 < T:
            d_out, r, z, n, hn, h_prev = _saved_step(t - 1, d_out_ptr, saved_ptr, h_buf_ptr, hid, sid, mask,
                                                     plane_h, plane_s, H, HAS_D_OUT)
        d_h_rec = direct + _dropped(_split_k_sum(partials_ptr, s, programs, counters_ptr + pid_b, plane_p, hid_p,
                                                 mask_p), drop, DROP)
        d_h_rec = _where_running(t, lengths, d_h_rec, d_h, HAS_LENGTHS)  # a finished row's passes through
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr)
