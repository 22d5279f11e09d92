"""The GRU's forward on the FMA units, one batch row a program (``Plan.fma``), in Gluon.

The design is ``ops/gluon_fma.py``'s: ``W_hh^T`` of the three gates in shared memory, a thread per
unit forming that unit's three dot products with ``h_{t-1}`` itself (IEEE fp32 fused
multiply-adds, strict fp32 as torch means it, in every dtype), h_t passed to every thread through
shared memory. No program waits for another: no grid barrier, no exchange through L2.

The recurrence, buffers and saved values are ``ops/gru/kernels.py``'s ``gru_forward_kernel``
(gates r, z, n; ``hn = W_hn h + b_hn``; ``n = tanh(xn + b_in + r hn)``; ``h_t = (1 - z) n + z
h_{t-1}``; ``naive.py`` is the readable reference), whose backward reads what this saves: ``x_proj
[T, B, 3H]``, ``h_buf [T+1, B, H]`` (step t writes ``h_buf[t+1]``; ``h_buf[0]`` is h0 when
saving), ``h_n [1, B, H]``, ``saved [T, B, 4H]`` fp32 r, z, n, hn; ``lengths [B]`` int32 as there.
"""

from __future__ import annotations

from ..gluon_common import AVAILABLE

if AVAILABLE:
    from ..gluon_common import _bias_vector, _wait_arrivals, _wait_prior, gl, gluon
    from ..gluon_fma import _sigmoid, _tanh, gate_inputs, gate_products, publish_h, row_start, weights_on_chip
    from ..gluon_produce import produce_tiles, rows_out

    @gluon.jit(do_not_specialize=["T", "B", "I", "PRODUCERS"])
    def gru_forward_fma_kernel(
        x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, x_ptr, w_ih_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
        counter_ptr,
        T, B, I, PRODUCERS,
        H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr, SAVE: gl.constexpr,
        HAS_LENGTHS: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr, K_SPLIT: gl.constexpr,
        REG_CHUNKS: gl.constexpr, FAST_ACT: gl.constexpr, HALF_W: gl.constexpr, PDL: gl.constexpr,
        PRODUCE: gl.constexpr, PRECISION: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        """Program ``program_id(1)`` runs batch row ``b`` through all ``T`` steps; grid ``(1, B)``,
        ``K_SPLIT * K_PAD = 32 * num_warps`` threads, one per unit (at least H) and part of k;
        ``REG_CHUNKS`` chunks of k of every gate in registers (``gluon_fma.weights_on_chip``);
        ``HALF_W``: fp32 weights held as scaled fp16 (``Plan.half_weights``); ``PDL``: launched by
        programmatic dependent launch (``launch.dependent_launch``), waits for the projection after
        loading its weights, biases and h0. ``PRODUCE``: the projection is this launch's own, as
        the LSTM's (``lstm_forward_fma_kernel``; ``W_ih [3H, I]``)."""
        pid = gl.program_id(1)
        if PRODUCE:  # (a constexpr first: without it no producer's code is compiled)
            if pid < PRODUCERS:
                produce_tiles(x_ptr, w_ih_ptr, x_proj_ptr, counter_ptr, T * B, I, 3 * H, pid, PRODUCERS, PRECISION,
                              BM, BN, BK, num_warps)
            else:
                _gru_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
                         counter_ptr, pid - PRODUCERS, gl.cdiv(T * B, BM) * gl.cdiv(3 * H, BN), T, B, H, HAS_BIAS,
                         HAS_H0, SAVE, HAS_LENGTHS, K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, FAST_ACT, HALF_W, PDL, True,
                         num_warps)
        else:
            _gru_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
                     counter_ptr, pid, 0, T, B, H, HAS_BIAS, HAS_H0, SAVE, HAS_LENGTHS, K_ROWS, K_PAD, K_SPLIT,
                     REG_CHUNKS, FAST_ACT, HALF_W, PDL, False, num_warps)

    @gluon.jit
    def _gru_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
                 counter_ptr, b, tiles, T, B, H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr,
                 SAVE: gl.constexpr, HAS_LENGTHS: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr,
                 K_SPLIT: gl.constexpr, REG_CHUNKS: gl.constexpr, FAST_ACT: gl.constexpr, HALF_W: gl.constexpr,
                 PDL: gl.constexpr, PRODUCED: gl.constexpr, num_warps: gl.constexpr):
        """:func:`gru_forward_fma_kernel`'s batch row ``b`` through all ``T`` steps (``PRODUCED``:
        after the ``tiles`` of ``x_proj`` are counted at ``counter_ptr``)."""
        w_reg, w_smem, scales = weights_on_chip(w_hh_ptr, H, 3, K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, HALF_W,
                                                num_warps)
        h_smem, units, mask, length, row, plane, h = row_start(h0_ptr, lengths_ptr, b, T, B, H, HAS_H0,
                                                               HAS_LENGTHS, K_PAD, K_SPLIT, num_warps)
        bias_r = _bias_vector(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS, True)
        bias_z = _bias_vector(b_ih_ptr + H, b_hh_ptr + H, units, mask, HAS_BIAS, True)
        bias_xn = _bias_vector(b_ih_ptr + 2 * H, b_hh_ptr, units, mask, HAS_BIAS, False)  # b_in
        bias_hn = _bias_vector(b_hh_ptr + 2 * H, b_ih_ptr, units, mask, HAS_BIAS, False)  # b_hn
        _wait_prior(PDL)
        if PRODUCED:  # (the weights, biases and h0 read above; x_proj, the producers', from here)
            _wait_arrivals(counter_ptr, tiles)
        if SAVE:
            gl.store(h_buf_ptr + row + units, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        h_smem.index(0).store(h)
        x = gate_inputs(x_proj_ptr, 0, 3 * plane, 3 * row, units, mask, H, 3, PRODUCED)
        x2 = gate_inputs(x_proj_ptr, gl.minimum(1, T - 1), 3 * plane, 3 * row, units, mask, H, 3, PRODUCED)
        gl.thread_barrier()
        t = 0
        while t < T:
            # The input two steps ahead (past the end: the last step's again), as the RNN's FMA
            # kernel: loaded one step ahead, the loop's end waited for it.
            x3 = gate_inputs(x_proj_ptr, gl.minimum(t + 2, T - 1), 3 * plane, 3 * row, units, mask, H, 3, PRODUCED)
            a_r, a_z, a_n = gate_products(w_reg, w_smem, scales, h_smem.index(t % 2), 3,
                                             K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, HALF_W, num_warps)
            r = _sigmoid(a_r + x[0].to(gl.float32) + bias_r, FAST_ACT)
            z = _sigmoid(a_z + x[1].to(gl.float32) + bias_z, FAST_ACT)
            hn = a_n + bias_hn
            n = _tanh(x[2].to(gl.float32) + bias_xn + r * hn, FAST_ACT)
            running = t < length
            h = gl.where(running, n + z * (h - n), h)  # past its length a row keeps its state
            publish_h(h_smem, h_buf_ptr, h, t, running, plane, row, units, mask)
            if SAVE:
                s_t = saved_ptr + t * (4 * plane) + 4 * row + units
                gl.store(s_t, r, mask=mask)
                gl.store(s_t + H, z, mask=mask)
                gl.store(s_t + 2 * H, n, mask=mask)
                gl.store(s_t + 3 * H, hn, mask=mask)
            # h_t in its buffer for every thread; the other buffer, read this step, is written next step
            gl.thread_barrier()
            x, x2 = x2, x3
            t += 1
        gl.store(h_n_ptr + row + units, h.to(h_n_ptr.dtype.element_ty), mask=mask)
        if PRODUCED:
            rows_out(counter_ptr, B)
