"""Elman RNN recurrence kernels (tanh or relu): one launch runs every time step of one layer
and direction. ``h_t = act(x_proj_t + h_{t-1} W_hh^T)`` with ``x_proj = x W_ih^T + b_ih + b_hh``
computed outside by one matmul.

Buffers (contiguous): ``x_proj [T, B, H]``; ``h_buf [T+1, B, H]`` with ``h_buf[0] = h0``, step t
writes ``h_buf[t+1]``; ``saved [T, B, H]`` fp32 h_t (the activation's derivative comes from it).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import _grid_barrier, _load_f32, _load_rows, _load_weights, _matmul_from_l2, _mma, _tanh


@triton.jit
def _activation(x, RELU: tl.constexpr):
    if RELU:
        y = tl.maximum(x, 0.0)
    else:
        y = _tanh(x)
    return y


@triton.jit(do_not_specialize=["T", "B"])
def rnn_forward_kernel(
    x_proj_ptr, w_hh_ptr, h_buf_ptr, saved_ptr, counter_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    row_mask = rows < B
    col_mask = cols < H
    mask = row_mask[:, None] & col_mask[None, :]
    hid = rows[:, None] * H + cols[None, :]
    plane_h = B.to(tl.int64) * H
    zero = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    if W_RESIDENT:
        w = _load_weights(w_hh_ptr, 1, H, cols, col_mask, 0, H, K_PAD)
    t = 0
    while t < T:
        h_prev_ptr = h_buf_ptr + t * plane_h
        if W_RESIDENT:
            a = _mma(_load_rows(h_prev_ptr, H, rows, row_mask, 0, H, K_PAD), w, zero, PRECISION, UPCAST)
        else:
            a = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr, 1, H, cols, col_mask,
                                zero, H, BLOCK_K, PRECISION, UPCAST)
        h = _activation(a + _load_f32(x_proj_ptr + t * plane_h, hid, mask), RELU)
        tl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if SAVE:
            tl.store(saved_ptr + t * plane_h + hid, h, mask=mask)
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (t + 1))
        t += 1


@triton.jit(do_not_specialize=["T", "B"])
def rnn_backward_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, w_hh_ptr, d_pre_ptr, d_h0_ptr, counter_ptr,
    T, B,
    H: tl.constexpr, RELU: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    """Reverse-time recurrence. Writes ``d_pre [T, B, H]`` (gradient of the pre-activation, in
    the weights' dtype) and ``d_h0`` (fp32)."""
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    row_mask = rows < B
    col_mask = cols < H
    mask = row_mask[:, None] & col_mask[None, :]
    hid = rows[:, None] * H + cols[None, :]
    plane_h = B.to(tl.int64) * H
    if W_RESIDENT:
        w = _load_weights(w_hh_ptr, H, 1, cols, col_mask, 0, H, K_PAD)
    d_h_rec = _load_f32(d_h_n_ptr, hid, mask)
    s = 0
    while s < T:
        t = T - 1 - s
        d_h = d_h_rec + _load_f32(d_out_ptr + t * plane_h, hid, mask)
        h = _load_f32(saved_ptr + t * plane_h, hid, mask)
        if RELU:
            d_pre = tl.where(h > 0.0, d_h, 0.0)
        else:
            d_pre = d_h * (1.0 - h * h)
        dp_t = d_pre_ptr + t * plane_h
        tl.store(dp_t + hid, d_pre.to(d_pre_ptr.dtype.element_ty), mask=mask)
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (s + 1))
        acc = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
        if W_RESIDENT:
            acc = _mma(_load_rows(dp_t, H, rows, row_mask, 0, H, K_PAD), w, acc, PRECISION, UPCAST)
        else:
            acc = _matmul_from_l2(dp_t, H, rows, row_mask, w_hh_ptr, H, 1, cols, col_mask,
                                  acc, H, BLOCK_K, PRECISION, UPCAST)
        d_h_rec = acc
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec, mask=mask)
