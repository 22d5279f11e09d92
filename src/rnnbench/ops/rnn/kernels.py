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

from ..common import (_act_tanh, _arrive, _columns_matmul, _forward_weights, _gate_bias, _load_f32,
                      _load_weight_columns, _mma, _program_tile, _publish_h, _recurrent_matmul, _release_counters,
                      _split_h0, _stacked_rows, _wait)


@triton.jit
def _activation(x, RELU: tl.constexpr, FAST: tl.constexpr):
    if RELU:
        y = tl.maximum(x, 0.0)
    else:
        y = _act_tanh(x, FAST)
    return y


@triton.jit(do_not_specialize=["T", "B"])
def rnn_forward_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr,
    h_buf_ptr, h_n_ptr, saved_ptr, w_split_ptr, h_split_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr,
):
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    plane_h = B.to(tl.int64) * H
    out_ty = h_buf_ptr.dtype.element_ty

    w_rows, w_valid = _stacked_rows(pid_h, H, 1, 1, BLOCK_H)
    w_plane = 1 * H * H  # one [1H, H] plane of W_hh's split copy
    w, w_src = _forward_weights(w_hh_ptr, w_split_ptr, w_plane, w_rows, w_valid, H, BLOCK_K, CHUNKS, W_RESIDENT,
                                SPLIT_ONCE)
    bias = _gate_bias(b_ih_ptr, b_hh_ptr, units, unit_mask, HAS_BIAS, True)
    zero = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
    h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else zero
    barriers = _split_h0(h, h_split_ptr, plane_h, hid, mask, counters_ptr + pid_b, HAS_H0, SPLIT_ONCE)
    if SAVE:
        tl.store(h_buf_ptr + hid, h.to(out_ty), mask=mask)
    x = _load_f32(x_proj_ptr, hid, mask)
    if ON_CHIP:  # the next step's input too: see the loop's end
        x_next = _load_f32(x_proj_ptr + tl.minimum(1, T - 1) * plane_h, hid, mask)
    t = 0
    while t < T:
        a = _recurrent_matmul(w, h, w_src, w_rows, w_valid, h_buf_ptr, h0_ptr, h_split_ptr, w_plane, t, plane_h,
                              rows, row_mask, zero, H, K_PAD, BLOCK_K, CHUNKS, W_RESIDENT, ON_CHIP, HAS_H0, PRECISION,
                              UPCAST, SPLIT_ONCE)
        h = _activation(a + x + bias, RELU, FAST_ACT)
        # h published: arrive now, store and load the rest, then wait
        _publish_h(h, h_buf_ptr, h_split_ptr, t, T, plane_h, hid, mask, counters_ptr + pid_b, ON_CHIP, SPLIT_ONCE)
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
                _wait(counters_ptr + pid_b, tl.num_programs(0) * (t + 1 + barriers))
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
    d_out_ptr, d_h_n_ptr, saved_ptr, w_hh_t_ptr, d_pre_ptr, d_h0_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    """Reverse-time recurrence. Writes ``d_pre [T, B, H]`` (gradient of the pre-activation, in
    the weights' dtype) and ``d_h0``. ``w_hh_t`` is ``W_hh^T`` (contiguous)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    plane_h = B.to(tl.int64) * H
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
        d_h = d_h_rec + d_out
        if RELU:
            d_pre = tl.where(h > 0.0, d_h, 0.0)
        else:
            d_pre = d_h * (1.0 - h * h)
        dp_t = d_pre_ptr + t * plane_h
        d_pre = d_pre.to(d_pre_ptr.dtype.element_ty)
        tl.store(dp_t + hid, d_pre, mask=mask)
        if ON_CHIP:  # every unit's d_pre is ours (the resident tile is W_hh^T[all units, all units])
            d_out, h = d_out_next, h_next
            d_out_next, h_next = _saved_step(tl.maximum(t - 2, 0), d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
            d_h_rec = _mma(w, d_pre, zero, PRECISION, UPCAST)
        else:  # our d_pre published: arrive, then the next step's loads, then wait
            _arrive(counters_ptr + pid_b)
            if s + 1 < T:
                d_out, h = _saved_step(t - 1, d_out_ptr, saved_ptr, hid, mask, plane_h, HAS_D_OUT)
            _wait(counters_ptr + pid_b, tl.num_programs(0) * (s + 1))
            d_h_rec = _columns_matmul(w, w_hh_t_ptr, units, unit_mask, dp_t, rows, row_mask, zero, H, 1, 1, K_PAD,
                                      BLOCK_K, W_RESIDENT, PRECISION, UPCAST)
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr)
