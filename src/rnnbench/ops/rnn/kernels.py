"""Elman RNN recurrence kernels (tanh or relu): one launch runs every time step of one layer
and direction. ``h_t = act(x_proj_t + b_ih + b_hh + h_{t-1} W_hh^T)`` with ``x_proj = x W_ih^T``
computed outside by one matmul.

Tiles are ``[BLOCK_H, BLOCK_B]`` (see ``ops/common.py``); one gate, so the weight tile is the
program's ``BLOCK_H`` rows of W_hh. Buffers (contiguous): ``x_proj [T, B, H]``; ``h_buf [T+1, B,
H]``, step t writes ``h_buf[t+1]``, ``h_buf[0]`` (h0) only when saving; ``saved [T, B, H]`` fp32
h_t (the activation's derivative comes from it).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import (HALF_LO_SCALE, _act_tanh, _arrive, _columns_matmul, _dropped, _forward_weights, _gate_bias,
                      _gradient_in, _hat, _load_f32, _load_stacked_weights, _load_weight_columns, _mma, _mma_split,
                      _normed, _pow2_above, _program_tile, _publish_h, _recurrent_matmul, _release_counters,
                      _row_lengths, _shared_norm_back, _split_h0, _split_half, _split_tf32, _stacked_rows,
                      _step_moments, _wait, _where_running)


@triton.jit
def _activation(x, RELU: tl.constexpr, FAST: tl.constexpr):
    if RELU:
        y = tl.maximum(x, 0.0)
    else:
        y = _act_tanh(x, FAST)
    return y


@triton.jit
def _chip_split_weights(w_ptr, w_rows, w_valid, H: tl.constexpr, BLOCK_K: tl.constexpr, CHIP_SPLIT: tl.constexpr):
    """The on-chip RNN's resident ``W_hh`` split once, before the time loop: ``(hi, lo, scale)``.
    ``CHIP_SPLIT`` 1: TF32 high parts and remainders (:func:`_split_tf32`), ``scale`` 1. 2 (3xFP16):
    ``W_hh / scale`` split by ``common._split_half``, ``scale`` the power of two above ``max |W_hh|``
    (:func:`_pow2_above`: fp16's range holds any weights; a row 2^13 times smaller than the largest
    keeps about 2^-22 of its own size, smaller ones less)."""
    w = _load_stacked_weights(w_ptr, w_rows, w_valid, 0, H, BLOCK_K).to(tl.float32)
    if CHIP_SPLIT == 1:
        hi, lo = _split_tf32(w)
        scale = 1.0
    else:
        scale, inv = _pow2_above(tl.max(tl.max(tl.abs(w), axis=1), axis=0))
        hi, lo = _split_half(w * inv, False)
    return hi, lo, scale


@triton.jit
def _column_scales(h, SCALED: tl.constexpr):
    """``(s, 1 / s)`` per column (batch row) of fp32 ``h [K_PAD, BLOCK_B]`` for a 3xFP16 product:
    :func:`_pow2_above` its largest ``|h|`` when ``SCALED``, else ones (tanh's h, at most 1)."""
    if SCALED:
        scale, inv = _pow2_above(tl.max(tl.abs(h), axis=0))
    else:
        scale = tl.full([h.shape[1]], 1.0, tl.float32)
        inv = scale
    return scale, inv


@triton.jit
def _chip_split_matmul(w, h, h_scale, h_inv, zero, CHIP_SPLIT: tl.constexpr, SCALE_H: tl.constexpr):
    """The on-chip RNN's ``W_hh @ h_{t-1}`` from weights split once (:func:`_chip_split_weights`)
    and ``h`` (fp32 ``[K_PAD, BLOCK_B]``) split here: three products, the small ones summed apart
    (:func:`_mma_split`). 3xTF32 (``CHIP_SPLIT`` 1) or 3xFP16 (2: fp16 products at K 16 per
    instruction where TF32 takes 8, so half the wgmma chain; ``h`` divided by its column scales
    first when ``SCALE_H``, the result multiplied back)."""
    w_hi, w_lo, w_scale = w
    if CHIP_SPLIT == 1:
        h_hi, h_lo = _split_tf32(h)
        big, small = _mma_split(w_hi, w_lo, h_hi, h_lo, zero, zero)
        acc = big + small
    else:
        if SCALE_H:
            h = h * h_inv[None, :]
        h_hi, h_lo = _split_half(h, False)
        small = tl.dot(w_lo, h_hi, zero)
        small = tl.dot(w_hi, h_lo, small)
        acc = (tl.dot(w_hi, h_hi, zero) + small * (1.0 / HALF_LO_SCALE)) * w_scale
        if SCALE_H:
            acc = acc * h_scale[None, :]
    return acc


@triton.jit(do_not_specialize=["T", "B"])
def rnn_forward_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, drop_ptr, h0_drop_ptr, ln_ih_ptr, ln_hh_ptr,
    ln_hat_ptr, ln_rstd_ptr, ln_part_ptr, h_buf_ptr, y_ptr, h_n_ptr, saved_ptr, w_split_ptr, h_split_ptr,
    counters_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr, CHIP_SPLIT: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, DROP: tl.constexpr = False, LN: tl.constexpr = False,
):
    """``CHIP_SPLIT`` (on chip, strict fp32: :attr:`Plan.on_chip_split`): 0 Triton's ``tf32x3`` in
    every product (or no 3xTF32), 1 3xTF32 and 2 3xFP16 from operands split once
    (:func:`_chip_split_matmul`). ``HAS_LENGTHS``: a variable-length batch (``lengths [B]``
    int32), as the LSTM's forward. ``DROP``: recurrent dropout, as the LSTM's forward (``h_buf``
    holds ``h_t * drop``, ``y`` the output; not with ``CHIP_SPLIT``, whose scales bound h by 1).
    ``LN``: layer norm, as the LSTM's forward (across programs ``ln_part [2, programs, 2, B]``,
    one barrier a step for both norms): the product normalized over its H values, times ``ln_hh [H]``, plus ``b_hh``; each step's ``x_proj`` row likewise with ``ln_ih
    [H]`` and ``b_ih``; saving, ``ln_hat [T, B, H]`` and ``ln_rstd [T, B]`` as the LSTM's
    (:func:`rnn_backward_kernel`)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    STEP_BARRIERS: tl.constexpr = 2 if LN and not ON_CHIP else 1  # (h's exchange, the norms' across programs)
    plane_h = B.to(tl.int64) * H
    out_ty = h_buf_ptr.dtype.element_ty

    w_rows, w_valid = _stacked_rows(pid_h, H, 1, 1, BLOCK_H)
    w_plane = 1 * H * H  # one [1H, H] plane of W_hh's split copy
    if CHIP_SPLIT:
        w = _chip_split_weights(w_hh_ptr, w_rows, w_valid, H, BLOCK_K, CHIP_SPLIT)
        w_src = w_hh_ptr
        w_scale = 1.0  # (the on-chip split's scale is in w)
    else:
        w, w_src, w_scale = _forward_weights(w_hh_ptr, w_split_ptr, w_plane, w_rows, w_valid, H, BLOCK_K, CHUNKS,
                                             W_RESIDENT, SPLIT_ONCE, K_PAD, BLOCK_B, H)
    bias = _gate_bias(b_hh_ptr, b_ih_ptr, units, unit_mask, HAS_BIAS, True)
    zero = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
    h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else zero
    drop = _load_f32(drop_ptr, hid, mask) if DROP else zero
    h_rec = _dropped(h, drop, DROP)  # what the recurrent product reads
    # 3xFP16's h in fp16's range: h0 and relu's h scaled per column (tanh's h is at most 1)
    SCALE_H: tl.constexpr = CHIP_SPLIT == 2 and (HAS_H0 or RELU)
    h_scale, h_inv = _column_scales(h, SCALE_H)
    # The exchange's scales, apart from the on-chip split's h_scale and h_inv above: no half operands
    # for the RNN; 3xFP16 (level 4) for tanh's alone (relu's h has no bound to scale later steps by,
    # and its plan refuses it).
    barriers, h_scales, published_inv = _split_h0(h_rec, h0_drop_ptr, h_split_ptr, plane_h, hid, rows, row_mask,
                                                  mask, counters_ptr + pid_b, H, K_PAD, BLOCK_K, HAS_H0, SPLIT_ONCE)
    if SAVE:
        tl.store(h_buf_ptr + hid, h_rec.to(out_ty), mask=mask)
    x = _load_f32(x_proj_ptr, hid, mask)
    if ON_CHIP:  # the next step's input too: see the loop's end
        x_next = _load_f32(x_proj_ptr + tl.minimum(1, T - 1) * plane_h, hid, mask)
    t = 0
    while t < T:
        if CHIP_SPLIT:
            a = _chip_split_matmul(w, h, h_scale, h_inv, zero, CHIP_SPLIT, SCALE_H)
        else:
            a = _recurrent_matmul(w, h_rec, w_src, w_rows, w_valid, h_buf_ptr, h0_drop_ptr, h_split_ptr, w_plane, t,
                                  plane_h, rows, row_mask, zero, H, K_PAD, BLOCK_K, CHUNKS, W_RESIDENT, ON_CHIP, HAS_H0,
                                  PRECISION, UPCAST, SPLIT_ONCE, w_scale, h_scales, plane_h, H)
        if LN:
            mean, rstd, x_mean, x_rstd = _step_moments(
                a, a, a, a, x, x, x, x, unit_mask[:, None], ln_part_ptr, counters_ptr + pid_b,
                tl.num_programs(0) * (barriers + t * STEP_BARRIERS + 1), pid_h, rows, row_mask, B, 1, H, BLOCK_H,
                K_PAD, ON_CHIP)
            if SAVE:
                tl.store(ln_hat_ptr + t * plane_h + hid, _hat(a, mean, rstd, unit_mask[:, None]), mask=mask)
                tl.store(ln_rstd_ptr + t * B + rows[None, :], rstd, mask=row_mask[None, :])
            a = _normed(a, mean, rstd, ln_hh_ptr, units, unit_mask)
            a += _normed(x, x_mean, x_rstd, ln_ih_ptr, units, unit_mask)
        else:
            a += x
        h = _where_running(t, lengths, _activation(a + bias, RELU, FAST_ACT), h, HAS_LENGTHS)
        if SCALE_H:
            h_scale, h_inv = _column_scales(h, RELU)
        h_rec = _dropped(h, drop, DROP)
        # h published: arrive now, store and load the rest, then wait
        _publish_h(_where_running(t, lengths, h_rec, zero, HAS_LENGTHS), h_buf_ptr, h_split_ptr, t, T, plane_h, hid,
                   mask, counters_ptr + pid_b, ON_CHIP, SPLIT_ONCE, published_inv, plane_h, hid, mask)
        if DROP:  # the output, apart from the exchange's dropped h
            tl.store(y_ptr + (t + 1) * plane_h + hid, _where_running(t, lengths, h, zero, HAS_LENGTHS).to(out_ty),
                     mask=mask)
        if SAVE:
            tl.store(saved_ptr + t * plane_h + hid, h, mask=mask)
        if ON_CHIP:
            # The input two steps ahead, loaded unconditionally (past the end: the last step's
            # again). Loaded inside the `t + 1 < T` branch instead, as the exchange plan must (its
            # barrier is there), an on-chip step was 1.7x (TF32) and 1.4x (3xTF32) longer at
            # hidden 100 on the H100, bf16 the same; forward errors against float64 the same to
            # every digit (results/h100/triton-lane-6/README.md, "Loads outside the branch").
            x = x_next
            x_next = _load_f32(x_proj_ptr + tl.minimum(t + 2, T - 1) * plane_h, hid, mask)
        else:
            if t + 1 < T:
                x = _load_f32(x_proj_ptr + (t + 1) * plane_h, hid, mask)
                _wait(counters_ptr + pid_b, tl.num_programs(0) * ((t + 1) * STEP_BARRIERS + barriers))
        t += 1
    tl.store(h_n_ptr + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr)


@triton.jit
def _saved_step(t, d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT: tl.constexpr):
    if HAS_D_OUT:
        d_out = _load_f32(d_out_ptr + t * plane_h, hid, mask)
    else:
        d_out = tl.zeros(hid.shape, dtype=tl.float32)
    return d_out, _load_f32(saved_ptr + t * plane_h, hid, mask)


@triton.jit(do_not_specialize=["T", "B"])
def rnn_backward_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, w_hh_t_ptr, d_pre_ptr, d_h0_ptr, lengths_ptr, drop_ptr, ln_hat_ptr,
    ln_rstd_ptr, ln_hh_ptr, d_raw_ptr, ln_part_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, DROP: tl.constexpr = False, LN: tl.constexpr = False,
):
    """Reverse-time recurrence. Writes ``d_pre [T, B, H]`` (gradient of the pre-activation, in
    the weights' dtype) and ``d_h0``. ``w_hh_t`` is ``W_hh^T`` (contiguous). ``HAS_LENGTHS`` and
    ``DROP``: as the LSTM's backward. ``LN``: the forward's layer norm (``ON_CHIP``), from what it
    saved (``ln_hat``, ``ln_rstd``) and the recurrent gain ``ln_hh [H]``: ``d_pre`` is then the
    gradient of both normalized products (the biases' and gains'), ``d_raw [T, B, H]`` that of the
    recurrent product before its norm (``W_hh``'s, and what ``dh_{t-1}`` is formed from); across
    programs as the GRU's backward (``ln_part [1, programs, 2, B]``)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    STEP_BARRIERS: tl.constexpr = 2 if LN and not ON_CHIP else 1  # (d_raw's exchange, the norm's across programs)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    drop = _load_f32(drop_ptr, hid, mask) if DROP else 0.0
    plane_h = B.to(tl.int64) * H
    if LN:
        gain = _load_f32(ln_hh_ptr, units, unit_mask)[:, None]
    if W_RESIDENT:
        w = _load_weight_columns(w_hh_t_ptr, units, unit_mask, 0, H, 1, K_PAD, K_PAD)
    else:
        w = 0
    zero = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
    d_h_rec = _load_f32(d_h_n_ptr, hid, mask) if HAS_D_H_N else zero
    d_out, h = _saved_step(T - 1, d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
    if ON_CHIP:  # two steps ahead, unconditionally, as the forward loads its input
        d_out_next, h_next = _saved_step(tl.maximum(T - 2, 0), d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
    s = 0
    while s < T:
        t = T - 1 - s
        d_h, d_h_cell = _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS)
        if RELU:
            d_pre = tl.where(h > 0.0, d_h_cell, 0.0)
        else:
            d_pre = d_h_cell * (1.0 - h * h)
        dp_t = d_pre_ptr + t * plane_h
        tl.store(dp_t + hid, d_pre.to(d_pre_ptr.dtype.element_ty), mask=mask)
        if LN:  # through the recurrent product's norm: the gradient before it (W_hh's, and dh_{t-1}'s)
            rstd = tl.load(ln_rstd_ptr + t * B + rows[None, :], mask=row_mask[None, :], other=0.0)
            hat = _load_f32(ln_hat_ptr + t * plane_h, hid, mask)
            d_pre, _, _, _ = _shared_norm_back(d_pre * gain, d_pre, d_pre, d_pre, hat, hat, hat, hat, rstd,
                                               unit_mask[:, None], ln_part_ptr, 0, counters_ptr + pid_b,
                                               tl.num_programs(0) * (s * STEP_BARRIERS + 1), pid_h, rows, row_mask, B,
                                               1, H, BLOCK_H, K_PAD, ON_CHIP)
            tl.store(d_raw_ptr + t * plane_h + hid, d_pre.to(d_raw_ptr.dtype.element_ty), mask=mask)
        d_pre = d_pre.to(d_pre_ptr.dtype.element_ty)  # (the product's operand)
        if ON_CHIP:  # every unit's d_pre is ours (the resident tile is W_hh^T[all units, all units])
            d_out, h = d_out_next, h_next
            d_out_next, h_next = _saved_step(tl.maximum(t - 2, 0), d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
            d_h_rec = _mma(w, d_pre, zero, PRECISION, UPCAST)
        else:  # our d_pre published: arrive, then the next step's loads, then wait
            _arrive(counters_ptr + pid_b)
            if s + 1 < T:
                d_out, h = _saved_step(t - 1, d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
            _wait(counters_ptr + pid_b, tl.num_programs(0) * (s + 1) * STEP_BARRIERS)
            # (layer norm: every program's gradient of the product before its norm)
            d_h_rec = _columns_matmul(w, w_hh_t_ptr, units, unit_mask, d_raw_ptr + t * plane_h if LN else dp_t, rows,
                                      row_mask, zero, H, 1, 1, K_PAD, BLOCK_K, W_RESIDENT, PRECISION, UPCAST)
        # (a finished row's passes through)
        d_h_rec = _where_running(t, lengths, _dropped(d_h_rec, drop, DROP), d_h, HAS_LENGTHS)
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr)
