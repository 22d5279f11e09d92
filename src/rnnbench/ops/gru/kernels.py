"""GRU recurrence kernels: one launch runs every time step of one layer and direction.

Gates r, z, n (torch.nn order) with the reset gate applied after the recurrent matmul, as cuDNN
and torch.nn do. ``x_proj = x W_ih^T + b_ih + [b_hr, b_hz, 0]`` (all steps, one matmul outside);
``b_hn`` stays inside because r multiplies it::

    r = sigmoid(xr + W_hr h)   z = sigmoid(xz + W_hz h)   hn = W_hn h + b_hn
    n = tanh(xn + r hn)        h_t = (1 - z) n + z h_{t-1}

Buffers (contiguous): ``x_proj [T, B, 3H]``; ``h_buf [T+1, B, H]`` with ``h_buf[0] = h0``, step t
writes ``h_buf[t+1]``; ``saved [T, B, 4H]`` fp32 holding r, z, n, hn for backward.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import _grid_barrier, _load_f32, _load_rows, _load_weights, _matmul_from_l2, _mma, _tanh


@triton.jit(do_not_specialize=["T", "B"])
def gru_forward_kernel(
    x_proj_ptr, w_hh_ptr, b_hn_ptr, h_buf_ptr, saved_ptr, counter_ptr,
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
    hid = rows[:, None] * H + cols[None, :]
    gid = rows[:, None] * (3 * H) + cols[None, :]  # gate r of a [B, 3H] plane
    sid = rows[:, None] * (4 * H) + cols[None, :]  # r of a [B, 4H] saved plane
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (3 * H)
    plane_s = B.to(tl.int64) * (4 * H)
    zero = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    b_hn = tl.load(b_hn_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]

    if W_RESIDENT:
        w_r = _load_weights(w_hh_ptr + 0 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)
        w_z = _load_weights(w_hh_ptr + 1 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)
        w_n = _load_weights(w_hh_ptr + 2 * H * H, 1, H, cols, col_mask, 0, H, K_PAD)

    h = _load_f32(h_buf_ptr, hid, mask)  # fp32 copy of our slice of h, carried across steps
    t = 0
    while t < T:
        h_prev_ptr = h_buf_ptr + t * plane_h
        if W_RESIDENT:
            h_prev = _load_rows(h_prev_ptr, H, rows, row_mask, 0, H, K_PAD)
            a_r = _mma(h_prev, w_r, zero, PRECISION, UPCAST)
            a_z = _mma(h_prev, w_z, zero, PRECISION, UPCAST)
            a_n = _mma(h_prev, w_n, zero, PRECISION, UPCAST)
        else:
            a_r = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 0 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
            a_z = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 1 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
            a_n = _matmul_from_l2(h_prev_ptr, H, rows, row_mask, w_hh_ptr + 2 * H * H, 1, H, cols, col_mask,
                                  zero, H, BLOCK_K, PRECISION, UPCAST)
        x_t = x_proj_ptr + t * plane_g
        r = tl.sigmoid(a_r + _load_f32(x_t, gid + 0 * H, mask))
        z = tl.sigmoid(a_z + _load_f32(x_t, gid + 1 * H, mask))
        hn = a_n + b_hn
        n = _tanh(_load_f32(x_t, gid + 2 * H, mask) + r * hn)
        h = n + z * (h - n)
        tl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if SAVE:
            s_t = saved_ptr + t * plane_s
            tl.store(s_t + sid + 0 * H, r, mask=mask)
            tl.store(s_t + sid + 1 * H, z, mask=mask)
            tl.store(s_t + sid + 2 * H, n, mask=mask)
            tl.store(s_t + sid + 3 * H, hn, mask=mask)
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (t + 1))
        t += 1


@triton.jit(do_not_specialize=["T", "B"])
def gru_backward_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, h_buf_ptr, w_hh_ptr, d_gates_h_ptr, d_n_x_ptr, d_h0_ptr,
    counter_ptr,
    T, B,
    H: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):
    """Reverse-time recurrence. Writes ``d_gates_h [T, B, 3H]``, the gradients of the recurrent
    pre-activations ``(W_hr h, W_hz h, W_hn h + b_hn)``, ``d_n_x [T, B, H]``, the gradient of
    the input-side n pre-activation (it differs from the recurrent one by the factor r), both in
    the weights' dtype, and ``d_h0`` (fp32)."""
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    row_mask = rows < B
    col_mask = cols < H
    mask = row_mask[:, None] & col_mask[None, :]
    hid = rows[:, None] * H + cols[None, :]
    gid = rows[:, None] * (3 * H) + cols[None, :]
    sid = rows[:, None] * (4 * H) + cols[None, :]
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (3 * H)
    plane_s = B.to(tl.int64) * (4 * H)

    if W_RESIDENT:
        w_r = _load_weights(w_hh_ptr + 0 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)
        w_z = _load_weights(w_hh_ptr + 1 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)
        w_n = _load_weights(w_hh_ptr + 2 * H * H, H, 1, cols, col_mask, 0, H, K_PAD)

    d_h_rec = _load_f32(d_h_n_ptr, hid, mask)
    s = 0
    while s < T:
        t = T - 1 - s
        d_h = d_h_rec + _load_f32(d_out_ptr + t * plane_h, hid, mask)
        s_t = saved_ptr + t * plane_s
        r = _load_f32(s_t, sid + 0 * H, mask)
        z = _load_f32(s_t, sid + 1 * H, mask)
        n = _load_f32(s_t, sid + 2 * H, mask)
        hn = _load_f32(s_t, sid + 3 * H, mask)
        h_prev = _load_f32(h_buf_ptr + t * plane_h, hid, mask)
        d_n = d_h * (1.0 - z) * (1.0 - n * n)  # through tanh: gradient of n's pre-activation
        d_z = d_h * (h_prev - n) * z * (1.0 - z)
        d_r = d_n * hn * r * (1.0 - r)
        dg_t = d_gates_h_ptr + t * plane_g
        out_ty = d_gates_h_ptr.dtype.element_ty
        tl.store(dg_t + gid + 0 * H, d_r.to(out_ty), mask=mask)
        tl.store(dg_t + gid + 1 * H, d_z.to(out_ty), mask=mask)
        tl.store(dg_t + gid + 2 * H, (d_n * r).to(out_ty), mask=mask)
        tl.store(d_n_x_ptr + t * plane_h + hid, d_n.to(out_ty), mask=mask)
        _grid_barrier(counter_ptr + pid_b, tl.num_programs(0) * (s + 1))
        acc = d_h * z  # h_{t-1} also reaches h_t directly through the z gate
        if W_RESIDENT:
            acc = _mma(_load_rows(dg_t + 0 * H, 3 * H, rows, row_mask, 0, H, K_PAD), w_r, acc, PRECISION, UPCAST)
            acc = _mma(_load_rows(dg_t + 1 * H, 3 * H, rows, row_mask, 0, H, K_PAD), w_z, acc, PRECISION, UPCAST)
            acc = _mma(_load_rows(dg_t + 2 * H, 3 * H, rows, row_mask, 0, H, K_PAD), w_n, acc, PRECISION, UPCAST)
        else:
            for gate in tl.static_range(3):
                acc = _matmul_from_l2(dg_t + gate * H, 3 * H, rows, row_mask, w_hh_ptr + gate * H * H, H, 1,
                                      cols, col_mask, acc, H, BLOCK_K, PRECISION, UPCAST)
        d_h_rec = acc
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec, mask=mask)
