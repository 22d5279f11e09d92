"""LSTM recurrence kernels: one launch runs every time step of one layer and direction.

Gates i, f, g, o (torch.nn order), pre-activations ``x_proj_t + b_ih + b_hh + h_{t-1} W_hh^T``
where ``x_proj = x W_ih^T`` (all steps at once) is computed outside by one matmul::

    i, f, o = sigmoid(.)   g = tanh(.)   c_t = f c_{t-1} + i g   h_t = o tanh(c_t)

Tiles are ``[BLOCK_H, BLOCK_B]`` (hidden units x batch rows, see ``ops/common.py``); one matmul per
step gives all four gates of the program's units. Buffers (contiguous, ``G = 4``): ``x_proj [T, B,
4H]``; ``h_buf [T+1, B, H]``, step t writing ``h_buf[t+1]`` (every step writes fresh memory, so no
program can overwrite what a slower one still reads), ``h_buf[0]`` written (h0) only when saving;
``c_buf [T+1, B, H]`` fp32 cell states and ``gates [T, B, 4H]`` fp32 activations, only when saving
for backward. ``h0``/``c0`` are read in place (zeros when absent).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import (_act_sigmoid, _act_tanh, _arrive, _back_tile, _cell_moments, _dropped, _exchange_offsets,
                      _forward_weights, _gate_bias, _gate_columns, _gradient_in, _hat, _load_f32, _load_weight_columns,
                      _normed, _on_chip_columns, _program_tile, _publish_h, _recurrent_matmul, _release_counters,
                      _resident_stack_t, _row_lengths, _shared_norm_back, _split_gates, _split_h0, _split_k_arrive,
                      _split_k_sum, _stack_gates, _stacked_rows, _step_moments, _tanh, _transpose_columns, _wait,
                      _where_running)


@triton.jit(do_not_specialize=["T", "B"])
def lstm_forward_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr, drop_ptr, h0_drop_ptr,
    ln_ih_ptr, ln_hh_ptr, ln_c_w_ptr, ln_c_b_ptr, ln_hat_ptr, ln_rstd_ptr, ln_part_ptr,
    h_buf_ptr, y_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, w_split_ptr, h_split_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, HAS_C0: tl.constexpr, SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, FAST_ACT: tl.constexpr, SPLIT_ONCE: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, DROP: tl.constexpr = False, LN: tl.constexpr = False,
):
    """``HAS_LENGTHS``: a variable-length batch, sequence ``b`` ``lengths[b]`` steps long (int32
    ``[B]``). Past its end a row keeps h and c (so ``h_n``, ``c_n`` are its own last step's) and
    its output is zero; ``h_buf`` holds those zeros there, read by the exchange for nothing (a
    finished row's new gates are discarded) and by the weight gradients beside zero gate gradients.
    ``DROP``: recurrent dropout (:func:`~rnnbench.ops.common._dropped`): ``h_{t-1}`` enters the
    recurrent product times the mask ``drop [B, H]``; ``h_buf`` (the exchange, and what the weight
    gradients read) holds ``h_t * drop``, ``y [T+1, B, H]`` the output ``h_t`` (from ``y[1]``), and
    the step-0 product reads ``h0_drop`` (``h0 * drop``) where it reads h0 from memory.
    ``LN``: layer norm (``rnnbench.reference.LayerNormWeights``): each step's ``x_proj`` row
    (``x W_ih^T``) and recurrent product are each normalized over their 4H values, times their gains
    ``ln_ih``, ``ln_hh`` (``[4H]``), plus ``b_ih``, ``b_hh``; ``c_t`` enters ``tanh`` normalized,
    times ``ln_c_w``, plus ``ln_c_b`` (``[H]``). Saving, it keeps the backward's recurrent product
    normalized, ``ln_hat [T, B, 4H]``, and its ``1/σ``, ``ln_rstd [T, B]`` (fp32;
    :func:`lstm_backward_kernel` with ``LN``). On chip a row's statistics are the program's own
    sums; in an exchange plan each program publishes its share into ``ln_part [3, programs, 2, B]``
    fp32 (:func:`~rnnbench.ops.common._publish_moments`) and reads everyone's after a grid barrier:
    one for both products' norms, one for the cell's, beside the step's exchange of h."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid = _program_tile(B, H, BLOCK_B, BLOCK_H)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    # grid barriers a step: h's exchange, and with layer norm across programs two more (the norms')
    STEP_BARRIERS: tl.constexpr = 3 if LN and not ON_CHIP else 1
    gid = rows[None, :] * (4 * H) + units[:, None]  # offsets of gate i into a [B, 4H] plane
    plane_h = B.to(tl.int64) * H
    plane_g = B.to(tl.int64) * (4 * H)
    out_ty = h_buf_ptr.dtype.element_ty

    w_rows, w_valid = _stacked_rows(pid_h, H, 4, 4, BLOCK_H)
    w_plane = 4 * H * H  # one [4H, H] plane of W_hh's split copy
    plane_e, hid_e, mask_e = _exchange_offsets(B, plane_h, hid, mask, rows, row_mask, units, H, H_STRIDE)
    w, w_src, w_scale = _forward_weights(w_hh_ptr, w_split_ptr, w_plane, w_rows, w_valid, H, BLOCK_K, CHUNKS,
                                         W_RESIDENT, SPLIT_ONCE, K_PAD, BLOCK_B, H_STRIDE)
    # b_hh + b_ih (layer norm: each the shift of its own norm, added after it all the same)
    bias_i = _gate_bias(b_hh_ptr, b_ih_ptr, 0 * H + units, unit_mask, HAS_BIAS, True)
    bias_f = _gate_bias(b_hh_ptr, b_ih_ptr, 1 * H + units, unit_mask, HAS_BIAS, True)
    bias_g = _gate_bias(b_hh_ptr, b_ih_ptr, 2 * H + units, unit_mask, HAS_BIAS, True)
    bias_o = _gate_bias(b_hh_ptr, b_ih_ptr, 3 * H + units, unit_mask, HAS_BIAS, True)
    zero = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
    c = _load_f32(c0_ptr, hid, mask) if HAS_C0 else zero  # fp32 cell state, never leaves the chip
    h = _load_f32(h0_ptr, hid, mask) if HAS_H0 else zero
    drop = _load_f32(drop_ptr, hid, mask) if DROP else zero
    h_rec = _dropped(h, drop, DROP)  # what the recurrent product reads
    barriers, h_scales, h_inv = _split_h0(h_rec, h0_drop_ptr, h_split_ptr, plane_e, hid_e, rows, row_mask, mask_e,
                                          counters_ptr + pid_b, H, K_PAD, BLOCK_K, HAS_H0, SPLIT_ONCE, False)
    if SAVE:  # backward reads h_{t-1} and c_{t-1} of every step
        tl.store(h_buf_ptr + hid, h_rec.to(out_ty), mask=mask)
        tl.store(c_buf_ptr + hid, c, mask=mask)
    x_i = _load_f32(x_proj_ptr, gid + 0 * H, mask)
    x_f = _load_f32(x_proj_ptr, gid + 1 * H, mask)
    x_g = _load_f32(x_proj_ptr, gid + 2 * H, mask)
    x_o = _load_f32(x_proj_ptr, gid + 3 * H, mask)
    t = 0
    while t < T:
        acc = _recurrent_matmul(w, h_rec, w_src, w_rows, w_valid, h_buf_ptr, h0_drop_ptr, h_split_ptr, w_plane, t,
                                plane_h, rows, row_mask,
                                tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32), H, K_PAD, BLOCK_K, CHUNKS,
                                W_RESIDENT, ON_CHIP, HAS_H0, PRECISION, UPCAST, SPLIT_ONCE, w_scale, h_scales,
                                plane_e, H_STRIDE)
        a_i, a_f, a_g, a_o = _split_gates(acc, BLOCK_H, BLOCK_B)
        if LN:
            arrived = tl.num_programs(0) * (barriers + t * STEP_BARRIERS)  # (before this step's)
            mean, rstd, x_mean, x_rstd = _step_moments(a_i, a_f, a_g, a_o, x_i, x_f, x_g, x_o, unit_mask[:, None],
                                                       ln_part_ptr, counters_ptr + pid_b,
                                                       arrived + tl.num_programs(0), pid_h, rows, row_mask, B, 4, H,
                                                       BLOCK_H, K_PAD, ON_CHIP)
            if SAVE:
                _store_grads(ln_hat_ptr + t * plane_g, gid, mask, H, _hat(a_i, mean, rstd, unit_mask[:, None]),
                             _hat(a_f, mean, rstd, unit_mask[:, None]), _hat(a_g, mean, rstd, unit_mask[:, None]),
                             _hat(a_o, mean, rstd, unit_mask[:, None]))
                tl.store(ln_rstd_ptr + t * B + rows[None, :], rstd, mask=row_mask[None, :])
            a_i = _normed(a_i, mean, rstd, ln_hh_ptr, 0 * H + units, unit_mask)
            a_f = _normed(a_f, mean, rstd, ln_hh_ptr, 1 * H + units, unit_mask)
            a_g = _normed(a_g, mean, rstd, ln_hh_ptr, 2 * H + units, unit_mask)
            a_o = _normed(a_o, mean, rstd, ln_hh_ptr, 3 * H + units, unit_mask)
            x_i = _normed(x_i, x_mean, x_rstd, ln_ih_ptr, 0 * H + units, unit_mask)
            x_f = _normed(x_f, x_mean, x_rstd, ln_ih_ptr, 1 * H + units, unit_mask)
            x_g = _normed(x_g, x_mean, x_rstd, ln_ih_ptr, 2 * H + units, unit_mask)
            x_o = _normed(x_o, x_mean, x_rstd, ln_ih_ptr, 3 * H + units, unit_mask)
        i = _act_sigmoid(a_i + x_i + bias_i, FAST_ACT)
        f = _act_sigmoid(a_f + x_f + bias_f, FAST_ACT)
        g = _act_tanh(a_g + x_g + bias_g, FAST_ACT)
        o = _act_sigmoid(a_o + x_o + bias_o, FAST_ACT)
        c = _where_running(t, lengths, f * c + i * g, c, HAS_LENGTHS)
        c_out = c  # (what enters tanh)
        if LN:
            c_mean, c_rstd = _cell_moments(c, unit_mask[:, None], ln_part_ptr, 2, counters_ptr + pid_b,
                                           arrived + 2 * tl.num_programs(0), pid_h, rows, row_mask, B, H, BLOCK_H,
                                           K_PAD, ON_CHIP)
            c_out = _normed(c, c_mean, c_rstd, ln_c_w_ptr, units, unit_mask) + _load_f32(ln_c_b_ptr, units,
                                                                                      unit_mask)[:, None]
        h = _where_running(t, lengths, o * _act_tanh(c_out, FAST_ACT), h, HAS_LENGTHS)
        h_rec = _dropped(h, drop, DROP)
        # h published: arrive now, store and load the rest, then wait
        _publish_h(_where_running(t, lengths, h_rec, zero, HAS_LENGTHS), h_buf_ptr, h_split_ptr, t, T, plane_h, hid,
                   mask, counters_ptr + pid_b, ON_CHIP, SPLIT_ONCE, h_inv, plane_e, hid_e, mask_e,
                   H_STRIDE != H)
        if DROP:  # the output, apart from the exchange's dropped h
            tl.store(y_ptr + (t + 1) * plane_h + hid, _where_running(t, lengths, h, zero, HAS_LENGTHS).to(out_ty),
                     mask=mask)
        if SAVE:
            s_t = gates_ptr + t * plane_g
            tl.store(s_t + gid + 0 * H, i, mask=mask)
            tl.store(s_t + gid + 1 * H, f, mask=mask)
            tl.store(s_t + gid + 2 * H, g, mask=mask)
            tl.store(s_t + gid + 3 * H, o, mask=mask)
            tl.store(c_buf_ptr + (t + 1) * plane_h + hid, c, mask=mask)
        if t + 1 < T:
            # Next step's input projection first (no other program writes it), then wait until
            # every program's h_t is in memory.
            x_t = x_proj_ptr + (t + 1) * plane_g
            x_i = _load_f32(x_t, gid + 0 * H, mask)
            x_f = _load_f32(x_t, gid + 1 * H, mask)
            x_g = _load_f32(x_t, gid + 2 * H, mask)
            x_o = _load_f32(x_t, gid + 3 * H, mask)
            if not ON_CHIP:
                _wait(counters_ptr + pid_b, tl.num_programs(0) * ((t + 1) * STEP_BARRIERS + barriers))
        t += 1
    tl.store(h_n_ptr + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
    tl.store(c_n_ptr + hid, c.to(c_n_ptr.dtype.element_ty), mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr)


@triton.jit
def _saved_step(t, d_out_ptr, gates_ptr, c_buf_ptr, hid, gid, mask, plane_h, plane_g, H: tl.constexpr,
                HAS_D_OUT: tl.constexpr):
    """What backward step t reads besides the other programs' gradients: the output gradient, the
    saved gate activations and the cell states c_t, c_{t-1} (fp32, ``[BLOCK_H, BLOCK_B]``)."""
    if HAS_D_OUT:
        d_out = _load_f32(d_out_ptr + t * plane_h, hid, mask)
    else:
        d_out = tl.zeros(hid.shape, dtype=tl.float32)
    s_t = gates_ptr + t * plane_g
    i = _load_f32(s_t, gid + 0 * H, mask)
    f = _load_f32(s_t, gid + 1 * H, mask)
    g = _load_f32(s_t, gid + 2 * H, mask)
    o = _load_f32(s_t, gid + 3 * H, mask)
    c = _load_f32(c_buf_ptr + (t + 1) * plane_h, hid, mask)
    c_prev = _load_f32(c_buf_ptr + t * plane_h, hid, mask)
    return d_out, i, f, g, o, c, c_prev


@triton.jit
def _back_start(T, d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr, c_buf_ptr, hid, gid, mask, plane_h, plane_g,
                H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr, HAS_D_C_N: tl.constexpr):
    """Before a backward kernel's first step: a zero tile, the gradients reaching h_T and c_T from
    past the sequence (zeros when absent) and step T-1's saved values (:func:`_saved_step`).
    Returns ``(zero, d_h, d_c, d_out, i, f, g, o, c, c_prev)``, fp32 ``[BLOCK_H, BLOCK_B]``."""
    zero = tl.zeros(hid.shape, dtype=tl.float32)
    d_h = _load_f32(d_h_n_ptr, hid, mask) if HAS_D_H_N else zero
    d_c = _load_f32(d_c_n_ptr, hid, mask) if HAS_D_C_N else zero
    d_out, i, f, g, o, c, c_prev = _saved_step(T - 1, d_out_ptr, gates_ptr, c_buf_ptr, hid, gid, mask, plane_h,
                                               plane_g, H, HAS_D_OUT)
    return zero, d_h, d_c, d_out, i, f, g, o, c, c_prev


@triton.jit
def _cell_step_back(d_h, d_c, i, f, g, o, c, c_prev, dg_t, gid, mask, H: tl.constexpr):
    """One reverse step of the cell for this program's tile: from ``d_h`` (the gradient reaching
    h_t) and ``d_c`` (reaching c_t from step t+1), the pre-activation gradients, stored at
    ``dg_t`` (the ``[B, 4H]`` plane of step t) and returned in its dtype, and the ``d_c`` that
    reaches c_{t-1}. Returns ``(d_i, d_f, d_g, d_o, d_c)``."""
    d_i, d_f, d_g, d_o, d_c = _cell_grads(d_h, d_c, i, f, g, o, c, c_prev, dg_t.dtype.element_ty)
    _store_grads(dg_t, gid, mask, H, d_i, d_f, d_g, d_o)
    return d_i, d_f, d_g, d_o, d_c


@triton.jit
def _cell_grads(d_h, d_c, i, f, g, o, c, c_prev, out_ty: tl.constexpr):
    """:func:`_cell_step_back` without the stores: ``(d_i, d_f, d_g, d_o)`` in ``out_ty`` and the
    fp32 ``d_c`` reaching c_{t-1}."""
    tanh_c = _tanh(c)
    d_c = d_c + d_h * o * (1.0 - tanh_c * tanh_c)
    d_i = d_c * g * i * (1.0 - i)
    d_f = d_c * c_prev * f * (1.0 - f)
    d_g = d_c * i * (1.0 - g * g)
    d_o = d_h * tanh_c * o * (1.0 - o)
    return d_i.to(out_ty), d_f.to(out_ty), d_g.to(out_ty), d_o.to(out_ty), d_c * f


@triton.jit
def _cell_grads_normed(d_h, d_c, i, f, g, o, c, c_prev, c_w, c_b, valid, part_ptr, counter_ptr, arrived, pid_h, rows,
                       row_mask, B, H: tl.constexpr, BLOCK_H: tl.constexpr, K_PAD: tl.constexpr,
                       ON_CHIP: tl.constexpr):
    """:func:`_cell_grads` where ``c_t`` entered ``tanh`` layer-normalized (times ``c_w``, plus
    ``c_b``, ``[BLOCK_H, 1]``; ``valid`` the real units): its norm recomputed from ``c_t``, the
    gradient through it to ``c_t`` by :func:`_norm_back`. Where the rows are spread over programs
    both take a grid barrier (``arrived`` arrivals before the first; norms 0 and 1 of ``part``).
    Returns ``(d_i, d_f, d_g, d_o)`` and the ``d_c`` reaching c_{t-1} in fp32, then the gradient
    reaching the normalized cell's output before its gain and shift, and that normalized cell (the
    gain's and shift's gradients)."""
    c_mean, c_rstd = _cell_moments(c, valid, part_ptr, 0, counter_ptr, arrived + tl.num_programs(0), pid_h, rows,
                                   row_mask, B, H, BLOCK_H, K_PAD, ON_CHIP)
    c_hat = _hat(c, c_mean, c_rstd, valid)
    tanh_c = _tanh(c_hat * c_w + c_b)
    d_c_in = d_h * o * (1.0 - tanh_c * tanh_c)  # reaching what tanh took
    d_c_hat, _, _, _ = _shared_norm_back(d_c_in * c_w, d_c_in, d_c_in, d_c_in, c_hat, c_hat, c_hat, c_hat, c_rstd,
                                         valid, part_ptr, 1, counter_ptr, arrived + 2 * tl.num_programs(0), pid_h,
                                         rows, row_mask, B, 1, H, BLOCK_H, K_PAD, ON_CHIP)
    d_c = d_c + d_c_hat
    d_i = d_c * g * i * (1.0 - i)
    d_f = d_c * c_prev * f * (1.0 - f)
    d_g = d_c * i * (1.0 - g * g)
    d_o = d_h * tanh_c * o * (1.0 - o)
    return d_i, d_f, d_g, d_o, d_c * f, d_c_in, c_hat


@triton.jit
def _store_grads(dg_t, gid, mask, H: tl.constexpr, d_i, d_f, d_g, d_o):
    """The four gates' pre-activation gradients into the ``[B, 4H]`` plane at ``dg_t``."""
    tl.store(dg_t + gid + 0 * H, d_i, mask=mask)
    tl.store(dg_t + gid + 1 * H, d_f, mask=mask)
    tl.store(dg_t + gid + 2 * H, d_g, mask=mask)
    tl.store(dg_t + gid + 3 * H, d_o, mask=mask)


@triton.jit(do_not_specialize=["T", "B"])
def lstm_backward_kernel(
    d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr, c_buf_ptr, w_hh_t_ptr, d_gates_ptr, d_h0_ptr, d_c0_ptr,
    lengths_ptr, drop_ptr, ln_hat_ptr, ln_rstd_ptr, ln_hh_ptr, d_raw_ptr, ln_c_w_ptr, ln_c_b_ptr, ln_sums_ptr,
    ln_part_ptr, partials_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr, HAS_D_C_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
    W_RESIDENT: tl.constexpr, ON_CHIP: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, GATE_GROUP: tl.constexpr = 0, SPAN_PAD: tl.constexpr = 0, DROP: tl.constexpr = False,
    LN: tl.constexpr = False,
):
    """Reverse-time recurrence. Writes ``d_gates [T, B, 4H]`` (gradients of the pre-activations,
    in the weights' dtype), ``d_h0`` and ``d_c0`` (in their pointers' dtype). Step t needs every
    program's ``d_gates[t]`` to form ``dh_{t-1} = d_gates[t] @ W_hh``, hence the barrier.
    ``w_hh_t`` is ``W_hh^T`` (``[H, 4H]``, contiguous: our units' columns of W_hh are its rows).
    ``HAS_LENGTHS``: as the forward; past a row's end its gate gradients are zero, ``d_h`` and
    ``d_c`` pass through unchanged and its output gradient is ignored (that output is a constant
    zero). ``GATE_GROUP`` (:attr:`Plan.gate_split`; streamed weights): the programs of a group
    that share their partials through ``partials_ptr`` (:func:`_gate_split_columns`), each
    multiplying ``4 // GATE_GROUP`` gates; 0: every program every gate of its own units
    (``partials_ptr`` unread). ``DROP``: the forward's recurrent dropout; the gradient of the
    recurrent product's operand ``h_{t-1} * drop`` reaches ``h_{t-1}`` times ``drop [B, H]``.
    ``LN``: the forward's layer norm (``ON_CHIP``: a program holds every unit of its rows), from
    what it saved (``ln_hat``, ``ln_rstd``) and the gains ``ln_hh [4H]``, ``ln_c_w``, ``ln_c_b``
    ``[H]``: ``d_gates`` holds the gradients of the gates' pre-activations (the biases', the gains'
    and the input norm's), ``d_raw [T, B, 4H]`` those of the recurrent product before its norm
    (``W_hh``'s, and what ``dh_{t-1}`` is formed from, which the other programs read); ``ln_sums [2,
    B, H]`` fp32 each row's sums over the steps of the cell norm's gain and shift gradients. On the
    transpose plan (not ``GATE_GROUP``) a row's sums are gathered from every program's share
    (``ln_part [3, programs, 2, B]`` fp32): the cell's statistics, its norm's backward and the
    product's, a grid barrier each before the step's exchange of ``d_raw``."""
    tl.static_assert(not LN or GATE_GROUP == 0, "layer norm: the transpose plan's every gate a program")
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid, gid, plane_h, plane_g = _back_tile(B, H, BLOCK_B,
                                                                                                  BLOCK_H, 4)
    # grid barriers a step: d_raw's exchange, and with layer norm across programs three more (the norms')
    STEP_BARRIERS: tl.constexpr = 4 if LN and not ON_CHIP else 1
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    drop = _load_f32(drop_ptr, hid, mask) if DROP else 0.0
    valid = unit_mask[:, None]
    if LN:
        gain_i = _load_f32(ln_hh_ptr, 0 * H + units, unit_mask)[:, None]
        gain_f = _load_f32(ln_hh_ptr, 1 * H + units, unit_mask)[:, None]
        gain_g = _load_f32(ln_hh_ptr, 2 * H + units, unit_mask)[:, None]
        gain_o = _load_f32(ln_hh_ptr, 3 * H + units, unit_mask)[:, None]
        c_w = _load_f32(ln_c_w_ptr, units, unit_mask)[:, None]
        c_b = _load_f32(ln_c_b_ptr, units, unit_mask)[:, None]
        sum_c_w = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)
        sum_c_b = tl.zeros([BLOCK_H, BLOCK_B], dtype=tl.float32)

    if ON_CHIP:  # one tile per gate: each gate's gradient is its own operand
        w = _gate_columns(w_hh_t_ptr, units, unit_mask, H, 4, K_PAD)
    elif W_RESIDENT:  # W_hh[:, our units] for all four gates, on chip for every step
        w = _load_weight_columns(w_hh_t_ptr, units, unit_mask, 0, H, 4, K_PAD, 4 * K_PAD)
    else:
        w = 0
    zero, d_h_rec, d_c, d_out, i, f, g, o, c, c_prev = _back_start(T, d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr,
                                                                   c_buf_ptr, hid, gid, mask, plane_h, plane_g, H,
                                                                   HAS_D_OUT, HAS_D_H_N, HAS_D_C_N)
    s = 0
    while s < T:
        t = T - 1 - s
        dg_t = d_gates_ptr + t * plane_g
        d_h, d_h_cell = _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS)
        d_c_cell = _where_running(t, lengths, d_c, zero, HAS_LENGTHS)
        if LN:
            arrived = tl.num_programs(0) * (s * STEP_BARRIERS)  # (before this step's)
            d_i, d_f, d_g, d_o, d_c_prev, d_c_in, c_hat = _cell_grads_normed(
                d_h_cell, d_c_cell, i, f, g, o, c, c_prev, c_w, c_b, valid, ln_part_ptr, counters_ptr + pid_b, arrived,
                pid_h, rows, row_mask, B, H, BLOCK_H, K_PAD, ON_CHIP)
            sum_c_w += d_c_in * c_hat
            sum_c_b += d_c_in
            out_ty = dg_t.dtype.element_ty
            _store_grads(dg_t, gid, mask, H, d_i.to(out_ty), d_f.to(out_ty), d_g.to(out_ty), d_o.to(out_ty))
            # through the recurrent product's norm: the gradient before it (W_hh's, and dh_{t-1}'s)
            hat_t = ln_hat_ptr + t * plane_g
            rstd = tl.load(ln_rstd_ptr + t * B + rows[None, :], mask=row_mask[None, :], other=0.0)
            d_i, d_f, d_g, d_o = _shared_norm_back(
                d_i * gain_i, d_f * gain_f, d_g * gain_g, d_o * gain_o, _load_f32(hat_t, gid + 0 * H, mask),
                _load_f32(hat_t, gid + 1 * H, mask), _load_f32(hat_t, gid + 2 * H, mask),
                _load_f32(hat_t, gid + 3 * H, mask), rstd, valid, ln_part_ptr, 2, counters_ptr + pid_b,
                arrived + 3 * tl.num_programs(0), pid_h, rows, row_mask, B, 4, H, BLOCK_H, K_PAD, ON_CHIP)
            d_i, d_f, d_g, d_o = d_i.to(out_ty), d_f.to(out_ty), d_g.to(out_ty), d_o.to(out_ty)
            _store_grads(d_raw_ptr + t * plane_g, gid, mask, H, d_i, d_f, d_g, d_o)
        else:
            d_i, d_f, d_g, d_o, d_c_prev = _cell_step_back(d_h_cell, d_c_cell, i, f, g, o, c, c_prev, dg_t, gid, mask,
                                                           H)
        d_c = _where_running(t, lengths, d_c_prev, d_c, HAS_LENGTHS)
        if not ON_CHIP:  # our gate gradients published: arrive, then the next step's loads, then wait
            _arrive(counters_ptr + pid_b)
        if s + 1 < T:  # the next step's saved values before the wait (no other program writes them)
            d_out, i, f, g, o, c, c_prev = _saved_step(t - 1, d_out_ptr, gates_ptr, c_buf_ptr, hid, gid, mask,
                                                       plane_h, plane_g, H, HAS_D_OUT)
        # dh_{t-1} = d_gates[t] @ W_hh[:, our units]
        if ON_CHIP:
            d_h_rec = _on_chip_columns(w, (d_i, d_f, d_g, d_o), zero, 4, PRECISION, UPCAST)
        else:  # every program's gates (layer norm: the product's gradient before its norm) after the barrier
            d_h_rec = _transpose_columns(zero, w, w_hh_t_ptr, units, unit_mask, d_raw_ptr + t * plane_g if LN else dg_t,
                                         rows, row_mask, partials_ptr, counters_ptr, s, plane_h, hid, mask, H, 4,
                                         GATE_GROUP, BLOCK_H, SPAN_PAD, K_PAD, BLOCK_K, W_RESIDENT, PRECISION, UPCAST,
                                         STEP_BARRIERS)
        # (a finished row's passes through)
        d_h_rec = _where_running(t, lengths, _dropped(d_h_rec, drop, DROP), d_h, HAS_LENGTHS)
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    tl.store(d_c0_ptr + hid, d_c.to(d_c0_ptr.dtype.element_ty), mask=mask)
    if LN:
        tl.store(ln_sums_ptr + hid, sum_c_w, mask=mask)
        tl.store(ln_sums_ptr + plane_h + hid, sum_c_b, mask=mask)
    if not ON_CHIP:
        _release_counters(counters_ptr, GATE_GROUP)


@triton.jit(do_not_specialize=["T", "B"])
def lstm_backward_split_k_kernel(
    d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr, c_buf_ptr, w_hh_ptr, d_gates_ptr, d_h0_ptr, d_c0_ptr,
    lengths_ptr, drop_ptr, partials_ptr, counters_ptr,
    T, B,
    H: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr, HAS_D_C_N: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, CHUNKS: tl.constexpr,
    W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, HAS_LENGTHS: tl.constexpr,
    H_STRIDE: tl.constexpr, DROP: tl.constexpr = False,
):
    """Reverse-time recurrence on the forward's split (``Plan.split_k``): each program multiplies
    its own units' gate gradients by its own rows of ``W_hh`` (the forward's stacked tile,
    transposed: ``W_stack^T``, resident when it fits) into a partial ``dh_{t-1}`` of every unit,
    writes it to ``partials [2, programs, B, H_STRIDE]`` (fp32 or 16-bit; two slots by step parity:
    :func:`_split_k_arrive`; rows padded to 16 bytes with :attr:`Plan.pad_rows`), and after the barrier sums the
    partials of its own units -- a split-K matmul whose K is spread over the programs. Same
    outputs as :func:`lstm_backward_kernel`; ``w_hh`` is ``W_hh`` itself (``[4H, H]``)."""
    pid_h, pid_b, units, rows, unit_mask, row_mask, mask, hid, gid, plane_h, plane_g = _back_tile(B, H, BLOCK_B,
                                                                                                  BLOCK_H, 4)
    programs: tl.constexpr = (H + BLOCK_H - 1) // BLOCK_H  # per batch block: tl.num_programs(0)
    lengths = _row_lengths(lengths_ptr, rows, row_mask, HAS_LENGTHS)
    drop = _load_f32(drop_ptr, hid, mask) if DROP else 0.0
    # the partials' [B, H_STRIDE] planes, rows padded to 16 bytes where H is not a multiple of 8
    plane_p, hid_p, mask_p = _exchange_offsets(B, plane_h, hid, mask, rows, row_mask, units, H, H_STRIDE)

    w_rows, w_valid = _stacked_rows(pid_h, H, 4, 4, BLOCK_H)
    if W_RESIDENT:
        w = _resident_stack_t(w_hh_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS)
    else:
        w = 0
    zero, d_h_rec, d_c, d_out, i, f, g, o, c, c_prev = _back_start(T, d_out_ptr, d_h_n_ptr, d_c_n_ptr, gates_ptr,
                                                                   c_buf_ptr, hid, gid, mask, plane_h, plane_g, H,
                                                                   HAS_D_OUT, HAS_D_H_N, HAS_D_C_N)
    s = 0
    while s < T:
        t = T - 1 - s
        dg_t = d_gates_ptr + t * plane_g
        d_h, d_h_cell = _gradient_in(t, lengths, d_h_rec, d_out, zero, HAS_LENGTHS)
        d_c_cell = _where_running(t, lengths, d_c, zero, HAS_LENGTHS)
        d_i, d_f, d_g, d_o, d_c_prev = _cell_grads(d_h_cell, d_c_cell, i, f, g, o, c, c_prev, dg_t.dtype.element_ty)
        d_c = _where_running(t, lengths, d_c_prev, d_c, HAS_LENGTHS)
        grads = _stack_gates(d_i, d_f, d_g, d_o, BLOCK_H, BLOCK_B)  # in d_gates' dtype, the weights'
        # The partials published first; d_gates (no other program reads it) and the next step's
        # saved values after the arrival, before the wait.
        _split_k_arrive(w, w_hh_ptr, w_rows, w_valid, grads, partials_ptr, s, programs, counters_ptr + pid_b,
                        plane_p, rows, row_mask, H, BLOCK_K, CHUNKS, W_RESIDENT, PRECISION, UPCAST, H_STRIDE)
        _store_grads(dg_t, gid, mask, H, d_i, d_f, d_g, d_o)
        if s + 1 < T:
            d_out, i, f, g, o, c, c_prev = _saved_step(t - 1, d_out_ptr, gates_ptr, c_buf_ptr, hid, gid, mask,
                                                       plane_h, plane_g, H, HAS_D_OUT)
        d_h_rec = _where_running(t, lengths, _dropped(_split_k_sum(partials_ptr, s, programs, counters_ptr + pid_b,
                                                                   plane_p, hid_p, mask_p), drop, DROP),
                                 d_h, HAS_LENGTHS)
        s += 1
    tl.store(d_h0_ptr + hid, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=mask)
    tl.store(d_c0_ptr + hid, d_c.to(d_c0_ptr.dtype.element_ty), mask=mask)
    _release_counters(counters_ptr)
