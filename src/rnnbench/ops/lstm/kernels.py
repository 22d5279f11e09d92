"""LSTM recurrence kernels: one launch runs every time step of one layer and direction.

Gates i, f, g, o (torch.nn order), pre-activations ``x_proj_t + h_{t-1} W_hh^T`` where ``x_proj``
(``x W_ih^T + b_ih + b_hh``, all steps at once) is computed outside by one matmul::

    i, f, o = sigmoid(.)   g = tanh(.)   c_t = f c_{t-1} + i g   h_t = o tanh(c_t)

Buffers (contiguous, ``G = 4``): ``x_proj [T, B, 4H]``; ``h_buf [T+1, B, H]`` with ``h_buf[0] = h0``
and step t writing ``h_buf[t+1]`` (so every step writes fresh memory: no program can overwrite
what a slower one still reads); ``c_buf [T+1, B, H]`` fp32 likewise (only ``c_buf[0]`` when not
saving); ``gates [T, B, 4H]`` fp32 activations saved for backward.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import _grid_barrier, _load_f32, _load_rows, _load_weights, _matmul_from_l2, _mma, _tanh


@triton.jit(do_not_specialize=["T", "B"])
def lstm_forward_kernel(
    x_proj_ptr, w_hh_ptr, h_buf_ptr, c_buf_ptr, c_n_ptr, gates_ptr, counter_ptr,
    T, B,
    H: tl.constexpr, SAVE: tl.constexpr,
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
    hid = rows[:, None] * H + cols[None, :]  # offsets into a [B, H] plane
    gid = rows[:, None] * (4 * H) + cols[None, :]  # offsets of gate i into a [B, 4H] plane
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (4 * H)
    zero = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)

    if W_RESIDENT:  # this program's columns of W_hh^T for each gate, on chip for all steps
        w_i = _load_weights(w_hh_ptr + 0 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)
        w_f = _load_weights(w_hh_ptr + 1 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)
        w_g = _load_weights(w_hh_ptr + 2 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)
        w_o = _load_weights(w_hh_ptr + 3 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)

    c = _load_f32(c_buf_ptr, hid, mask)  # fp32 cell state, owned by this program, never leaves chip
    t = 0
    while t < T:
        h_prev_ptr = h_buf_ptr + t * plane_h
        if W_RESIDENT:
            h_prev = _load_rows(h_prev_ptr, H, rows, row_mask, 0, H, K_PAD)
            a_i = _mma(h_prev, w_i, zero, PRECISION, UPCAST)
            a_f = _mma(h_prev, w_f, zero, PRECISION, UPCAST)
            a_g = _mma(h_prev, w_g, zero, PRECISION, UPCAST)
            a_o = _mma(h_prev, w_o, zero, PRECISION, UPCAST)
        else:
            a_i = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 0 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
            a_f = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 1 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
            a_g = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 2 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
            a_o = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 3 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
        x_t = x_proj_ptr + t * plane_g
        i = tl.sigmoid(a_i + _load_f32(x_t, gid + 0 * H, mask))
        f = tl.sigmoid(a_f + _load_f32(x_t, gid + 1 * H, mask))
        g = _tanh(a_g + _load_f32(x_t, gid + 2 * H, mask))
        o = tl.sigmoid(a_o + _load_f32(x_t, gid + 3 * H, mask))
        c = f * c + i * g
        h = o * _tanh(c)
        tl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if SAVE:
            s_t = gates_ptr + t * plane_g
            tl.store(s_t + gid + 0 * H, i, mask=mask)
            tl.store(s_t + gid + 1 * H, f, mask=mask)
            tl.store(s_t + gid + 2 * H, g, mask=mask)
            tl.store(s_t + gid + 3 * H, o, mask=mask)
            tl.store(c_buf_ptr + (t + 1) * plane_h + hid, c, mask=mask)
        # h_t of every program of this batch block must be in memory before anyone reads it.
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (t + 1))
        t += 1
    tl.store(c_n_ptr + hid, c, mask=mask)


@triton.jit(do_not_specialize=["T", "B"])
def lstm_backward_kernel(
    d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr, c_buf_ptr, w_hh_ptr, d_gates_ptr, d_h0_ptr, d_c0_ptr,
    counter_ptr,
    T, B,
    H: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    """Reverse-time recurrence. Writes ``d_gates [T, B, 4H]`` (gradients of the pre-activations,
    in the weights' dtype), ``d_h0`` and ``d_c0`` (fp32). Step t needs every program's
    ``d_gates[t]`` to form ``dh_{t-1} = d_gates[t] @ W_hh``, hence the barrier."""
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    row_mask = rows < B
    col_mask = cols < H
    mask = row_mask[:, None] & col_mask[None, :]
    hid = rows[:, None] * H + cols[None, :]
    gid = rows[:, None] * (4 * H) + cols[None, :]
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (4 * H)

    if W_RESIDENT:  # this program's columns of W_hh (rows g*H..g*H+H-1 of each gate)
        w_i = _load_weights(w_hh_ptr + 0 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)
        w_f = _load_weights(w_hh_ptr + 1 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)
        w_g = _load_weights(w_hh_ptr + 2 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)
        w_o = _load_weights(w_hh_ptr + 3 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)

    d_h_rec = _load_f32(d_h_n_ptr, hid, mask)  # gradient reaching h_t from step t+1 (or from h_n)
    d_c = _load_f32(d_c_n_ptr, hid, mask)
    s = 0
    while s < T:
        t = T - 1 - s
        d_h = d_h_rec + _load_f32(d_out_ptr + t * plane_h, hid, mask)
        s_t = gates_ptr + t * plane_g
        i = _load_f32(s_t, gid + 0 * H, mask)
        f = _load_f32(s_t, gid + 1 * H, mask)
        g = _load_f32(s_t, gid + 2 * H, mask)
        o = _load_f32(s_t, gid + 3 * H, mask)
        c = _load_f32(c_buf_ptr + (t + 1) * plane_h, hid, mask)
        c_prev = _load_f32(c_buf_ptr + t * plane_h, hid, mask)
        tanh_c = _tanh(c)
        d_c = d_c + d_h * o * (1.0 - tanh_c * tanh_c)
        d_i = d_c * g * i * (1.0 - i)
        d_f = d_c * c_prev * f * (1.0 - f)
        d_g = d_c * i * (1.0 - g * g)
        d_o = d_h * tanh_c * o * (1.0 - o)
        d_c = d_c * f
        dg_t = d_gates_ptr + t * plane_g
        out_ty = d_gates_ptr.dtype.element_ty
        tl.store(dg_t + gid + 0 * H, d_i.to(out_ty), mask=mask)
        tl.store(dg_t + gid + 1 * H, d_f.to(out_ty), mask=mask)
        tl.store(dg_t + gid + 2 * H, d_g.to(out_ty), mask=mask)
        tl.store(dg_t + gid + 3 * H, d_o.to(out_ty), mask=mask)
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (s + 1))
        # dh_{t-1} = sum over gates of d_gates[t][:, gate] @ W_hh[gate rows, our columns]
        acc = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
        if W_RESIDENT:
            acc = _mma(_load_rows(dg_t + 0 * H, 4 * H, rows, row_mask, 0, H, K_PAD), w_i, acc, PRECISION, UPCAST)
            acc = _mma(_load_rows(dg_t + 1 * H, 4 * H, rows, row_mask, 0, H, K_PAD), w_f, acc, PRECISION, UPCAST)
            acc = _mma(_load_rows(dg_t + 2 * H, 4 * H, rows, row_mask, 0, H, K_PAD), w_g, acc, PRECISION, UPCAST)
            acc = _mma(_load_rows(dg_t + 3 * H, 4 * H, rows, row_mask, 0, H, K_PAD), w_o, acc, PRECISION, UPCAST)
        else:
            for gate in tl.static_range(4):
                acc = _matmul_from_l2(dg_t + gate * H, 4 * H, rows, row_mask, w_hh_ptr + gate * H * H, H, 1,
                                      cols, col_mask, acc, H, BLOCK_K, PRECISION, UPCAST)
        d_h_rec = acc
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec, mask=mask)
    tl.store(d_c0_ptr + hid, d_c, mask=mask)
