"""The LSTM's forward on the FMA units, one batch row a program (``Plan.fma``), in Gluon.

The design is ``ops/gluon_fma.py``'s, as the GRU's (``ops/gru/fma.py``): ``W_hh^T`` of the four
gates on the chip (the first chunks of k in registers, the rest in shared memory), a thread per
unit forming that unit's four dot products with ``h_{t-1}`` itself (IEEE fp32 fused multiply-adds,
in every dtype), h_t passed to every thread through shared memory, the cell state fp32 in the
thread's registers. No program waits for another.

The recurrence, buffers and saved values are ``ops/lstm/kernels.py``'s ``lstm_forward_kernel``
(gates i, f, g, o; ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)``; ``naive.py`` is the readable
reference), whose backward reads what this saves: ``x_proj [T, B, 4H]``, ``h_buf [T+1, B, H]``
(step t writes ``h_buf[t+1]``; ``h_buf[0]`` is h0 when saving), ``c_buf [T+1, B, H]`` fp32 and
``gates [T, B, 4H]`` fp32 activations (only when saving), ``h_n``, ``c_n`` ``[1, B, H]``;
``lengths [B]`` int32 as there.
"""

from __future__ import annotations

from ..gluon_common import AVAILABLE

if AVAILABLE:
    from ..gluon_common import _bias_vector, _load_f32, _wait_arrivals, _wait_prior, gl, gluon
    from ..gluon_fma import _sigmoid, _tanh, gate_inputs, gate_products, publish_h, row_start, weights_on_chip
    from ..gluon_produce import produce_tiles, rows_out

    @gluon.jit(do_not_specialize=["T", "B", "I", "PRODUCERS"])
    def lstm_forward_fma_kernel(
        x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr, x_ptr, w_ih_ptr,
        h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, counter_ptr,
        T, B, I, PRODUCERS,
        H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr, HAS_C0: gl.constexpr, SAVE: gl.constexpr,
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
        loading its weights, biases and h0.

        ``PRODUCE`` (:attr:`~rnnbench.ops.plans.Plan.produce`): the projection is this launch's own.
        The first ``PRODUCERS`` programs compute ``x_proj = x W_ih^T`` (``x [T, B, I]``, ``W_ih [4H,
        I]``, contiguous) in ``[BM, BN]`` tiles by ``PRECISION`` (``ops/gluon_produce.py``), counting
        each at ``counter_ptr[0]``; program ``PRODUCERS + b`` runs batch row ``b`` once every tile
        is counted, and the last row out sets both counters (``[1]``: rows out) back to zero; grid
        ``(1, PRODUCERS + B)``. Otherwise ``x_ptr``, ``w_ih_ptr``, ``counter_ptr``, ``I`` and
        ``PRODUCERS`` are not read (``PRODUCERS`` 0)."""
        pid = gl.program_id(1)
        if PRODUCE:  # (a constexpr first: without it no producer's code is compiled)
            if pid < PRODUCERS:
                produce_tiles(x_ptr, w_ih_ptr, x_proj_ptr, counter_ptr, T * B, I, 4 * H, pid, PRODUCERS, PRECISION,
                              BM, BN, BK, num_warps)
            else:
                _lstm_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr,
                          c_n_ptr, c_buf_ptr, gates_ptr, counter_ptr, pid - PRODUCERS,
                          gl.cdiv(T * B, BM) * gl.cdiv(4 * H, BN), T, B, H, HAS_BIAS, HAS_H0, HAS_C0, SAVE,
                          HAS_LENGTHS, K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, FAST_ACT, HALF_W, PDL, True, num_warps)
        else:
            _lstm_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr,
                      c_n_ptr, c_buf_ptr, gates_ptr, counter_ptr, pid, 0, T, B, H, HAS_BIAS, HAS_H0, HAS_C0, SAVE,
                      HAS_LENGTHS, K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, FAST_ACT, HALF_W, PDL, False, num_warps)

    @gluon.jit
    def _lstm_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, c_n_ptr,
                  c_buf_ptr, gates_ptr, counter_ptr, b, tiles, T, B, H: gl.constexpr, HAS_BIAS: gl.constexpr,
                  HAS_H0: gl.constexpr, HAS_C0: gl.constexpr, SAVE: gl.constexpr, HAS_LENGTHS: gl.constexpr,
                  K_ROWS: gl.constexpr, K_PAD: gl.constexpr, K_SPLIT: gl.constexpr, REG_CHUNKS: gl.constexpr,
                  FAST_ACT: gl.constexpr, HALF_W: gl.constexpr, PDL: gl.constexpr, PRODUCED: gl.constexpr,
                  num_warps: gl.constexpr):
        """:func:`lstm_forward_fma_kernel`'s batch row ``b`` through all ``T`` steps (``PRODUCED``:
        after the ``tiles`` of ``x_proj`` are counted at ``counter_ptr``)."""
        w_reg, w_smem, scales = weights_on_chip(w_hh_ptr, H, 4, K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, HALF_W,
                                                num_warps)
        h_smem, units, mask, length, row, plane, h = row_start(h0_ptr, lengths_ptr, b, T, B, H, HAS_H0,
                                                               HAS_LENGTHS, K_PAD, K_SPLIT, num_warps)
        bias_i = _bias_vector(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS, True)
        bias_f = _bias_vector(b_ih_ptr + H, b_hh_ptr + H, units, mask, HAS_BIAS, True)
        bias_g = _bias_vector(b_ih_ptr + 2 * H, b_hh_ptr + 2 * H, units, mask, HAS_BIAS, True)
        bias_o = _bias_vector(b_ih_ptr + 3 * H, b_hh_ptr + 3 * H, units, mask, HAS_BIAS, True)
        if HAS_C0:  # the fp32 cell state, never leaves the chip
            c = _load_f32(c0_ptr + row, units, mask)
        else:
            c = gl.zeros_like(h)
        _wait_prior(PDL)
        if PRODUCED:  # (the weights, biases and states read above; x_proj, the producers', from here)
            _wait_arrivals(counter_ptr, tiles)
        if SAVE:  # backward reads h_{t-1} and c_{t-1} of every step
            gl.store(h_buf_ptr + row + units, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
            gl.store(c_buf_ptr + row + units, c, mask=mask)
        h_smem.index(0).store(h)
        x = gate_inputs(x_proj_ptr, 0, 4 * plane, 4 * row, units, mask, H, 4, PRODUCED)
        x2 = gate_inputs(x_proj_ptr, gl.minimum(1, T - 1), 4 * plane, 4 * row, units, mask, H, 4, PRODUCED)
        gl.thread_barrier()
        t = 0
        while t < T:
            # The input two steps ahead (past the end: the last step's again), as the GRU's.
            x3 = gate_inputs(x_proj_ptr, gl.minimum(t + 2, T - 1), 4 * plane, 4 * row, units, mask, H, 4, PRODUCED)
            a_i, a_f, a_g, a_o = gate_products(w_reg, w_smem, scales, h_smem.index(t % 2), 4,
                                                K_ROWS, K_PAD, K_SPLIT, REG_CHUNKS, HALF_W, num_warps)
            i = _sigmoid(a_i + x[0].to(gl.float32) + bias_i, FAST_ACT)
            f = _sigmoid(a_f + x[1].to(gl.float32) + bias_f, FAST_ACT)
            g = _tanh(a_g + x[2].to(gl.float32) + bias_g, FAST_ACT)
            o = _sigmoid(a_o + x[3].to(gl.float32) + bias_o, FAST_ACT)
            running = t < length  # past its length a row keeps its state
            c = gl.where(running, f * c + i * g, c)
            h = gl.where(running, o * _tanh(c, FAST_ACT), h)
            publish_h(h_smem, h_buf_ptr, h, t, running, plane, row, units, mask)
            if SAVE:
                s_t = gates_ptr + t * (4 * plane) + 4 * row + units
                gl.store(s_t, i, mask=mask)
                gl.store(s_t + H, f, mask=mask)
                gl.store(s_t + 2 * H, g, mask=mask)
                gl.store(s_t + 3 * H, o, mask=mask)
                gl.store(c_buf_ptr + (t + 1) * plane + row + units, c, mask=mask)
            # h_t in its buffer for every thread; the other buffer, read this step, is written next step
            gl.thread_barrier()
            x, x2 = x2, x3
            t += 1
        gl.store(h_n_ptr + row + units, h.to(h_n_ptr.dtype.element_ty), mask=mask)
        gl.store(c_n_ptr + row + units, c.to(c_n_ptr.dtype.element_ty), mask=mask)
        if PRODUCED:
            rows_out(counter_ptr, B)
