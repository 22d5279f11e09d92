"""The LSTM's forward kernel in Gluon, Triton's lower-level language, for 16-bit weights on Hopper.

The same recurrence, plan and buffers as :func:`rnnbench.ops.lstm.kernels.lstm_forward_kernel`
(its docstring and ``docs/kernels.md``, "One layer, one direction": one program per 16 hidden
units and 16 or 32 batch rows, the 64-row stacked tile of ``W_hh`` resident in shared memory, h
exchanged through global memory with the atomic-counter grid barrier, fp32 cell state, tanh and
sigmoid on the MUFU), written where the ``tl`` kernel cannot say what it wants:

- **h straight into shared memory, one wait for the step's product.** Every piece of h_{t-1}
  (256 columns) is copied from L2 into a shared buffer of its own (``cp.async``, all at once), and
  the pieces' wgmma chains are issued asynchronously one after another with one wait, where
  ``tl.dot`` outside a pipelined loop waits for each piece's chain;
- **the weights in registers** (``REG_WEIGHTS``, ``Plan.reg_weights``, up to three pieces of h):
  read once from shared memory before the time loop, wgmma's left operand from there, so a step
  reads only h from shared memory (0.93x the step at FlashRNN's shape on an H100,
  ``benchmarks/results/h100/rs-wgmma/``);
- **the gates leave the accumulator once.** The wgmma accumulator holds gate ``g`` in warp ``g``;
  it goes through shared memory (swizzled: read back down a unit's column, unswizzled rows put
  eight lanes on one bank) straight into the layout of the cell's arithmetic, the step input's
  loads and the stores.

On an H200 (``benchmarks/results/h200/gluon-step/``, kernel alone, against the ``tl`` kernel in
the same run): 0.86-0.87x the step at FlashRNN's shape (batch 16, hidden 768, fp16 and bf16),
0.93x at batch 32, hidden 512, 0.86x at hidden 1024, 0.97x at batch 128, hidden 512; 1.02x where h
is one piece (hidden 100-128), so the plan asks for it only past one piece
(``plans.gluon_forward``).

Gluon is experimental and its API moves between Triton releases: the kernel exists only where
:data:`~rnnbench.ops.gluon_common.AVAILABLE` (the releases it was written and measured against),
and everywhere else the ``tl`` kernel runs. The pieces it shares with the GRU's
(``ops/gru/gluon.py``) are ``ops/gluon_common.py``'s. Gluon has no interpreter: only the CUDA
tests run this kernel. No lengths (a variable-length batch runs the ``tl`` kernel).
"""

from __future__ import annotations

from ..gluon_common import AVAILABLE

if AVAILABLE:
    from ..gluon_common import (_arrive, _BH, _bias, _cell_tile, _copy_h, _gate, _gate_inputs, _load_f32,
                                _resident_buffers, _sigmoid, _step_product, _steps_ready, _store_gates, _tanh,
                                _wait_arrivals, _weights_in_registers, cell_layout, gl, gluon)

    @gluon.jit(do_not_specialize=["T", "B"])
    def lstm_forward_gluon_kernel(
        x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr,
        h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, counters_ptr, ready_ptr,
        T, B,
        H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr, HAS_C0: gl.constexpr, SAVE: gl.constexpr,
        AHEAD: gl.constexpr, BLOCK_B: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr,
        REG_WEIGHTS: gl.constexpr, num_warps: gl.constexpr,
    ):
        """``lstm_forward_kernel``'s arguments and results (no lengths, no split operands): h_1..h_T
        into ``h_buf[1:]`` (``h_buf[0]`` = h0 and ``c_buf``, ``gates`` only when ``SAVE``), ``h_n``
        and ``c_n``; grid (H / 16 programs, batch blocks of ``BLOCK_B`` rows), all resident.
        ``counters_ptr``: one int32 arrival counter per batch block, zero at launch and left
        non-zero (unlike the ``tl`` kernels', which the last program out zeroes: that exit count,
        whose result decides a branch after the loop, took this kernel from 80-146 registers a
        thread to 245-255, spilling 456 bytes at hidden 1024, batch 32; sm_90, Triton 3.6; tried
        again with a relaxed or an acq_rel count, the reset branched on or predicated, the count
        through an opaque copy: 250-255 registers in 18 of 30 fp16 variants of each, spills in 9
        (results/h100/gluon-gru/aot/). So the caller gives it
        zeroed counters of its own, ``launch.counted_counters``). ``AHEAD``: ``x_proj`` is
        being written while the kernel runs, in chunks of steps, and ``ready_ptr`` (int32, zero at
        launch) counts the steps written; step t's input is read once the count passes t. Without
        ``AHEAD`` ``ready_ptr`` is not read."""
        dt: gl.constexpr = w_hh_ptr.dtype.element_ty
        CELL: gl.constexpr = cell_layout(num_warps)
        unit0 = gl.program_id(0) * _BH
        row0 = gl.program_id(1) * BLOCK_B
        counter = counters_ptr + gl.program_id(1)
        w_smem, h_smem, g_smem = _resident_buffers(w_hh_ptr + unit0 * H, H - unit0, H, 4, BLOCK_B, PIECE, PIECES,
                                                   num_warps)
        u, b, unit_mask, mask = _cell_tile(unit0, row0, B, H, BLOCK_B, CELL)
        hid = b[None, :] * H + u[:, None]  # into a [B, H] plane, from the program's corner
        gid = b[None, :] * (4 * H) + u[:, None]  # gate i into a [B, 4H] plane, from the corner
        plane_h = B.to(gl.int64) * H
        plane_g = B.to(gl.int64) * (4 * H)
        h_corner = row0 * H + unit0
        g_corner = row0 * (4 * H) + unit0
        bias_i = _bias(b_ih_ptr + unit0, b_hh_ptr + unit0, u, unit_mask, HAS_BIAS, True)
        bias_f = _bias(b_ih_ptr + H + unit0, b_hh_ptr + H + unit0, u, unit_mask, HAS_BIAS, True)
        bias_g = _bias(b_ih_ptr + 2 * H + unit0, b_hh_ptr + 2 * H + unit0, u, unit_mask, HAS_BIAS, True)
        bias_o = _bias(b_ih_ptr + 3 * H + unit0, b_hh_ptr + 3 * H + unit0, u, unit_mask, HAS_BIAS, True)
        zero = gl.zeros([_BH, BLOCK_B], gl.float32, CELL)
        c = _load_f32(c0_ptr + h_corner, hid, mask) if HAS_C0 else zero  # fp32 cell state, never leaves the chip
        if SAVE:  # backward reads h_{t-1} and c_{t-1} of every step
            h0 = _load_f32(h0_ptr + h_corner, hid, mask) if HAS_H0 else zero
            gl.store(h_buf_ptr + h_corner + hid, h0.to(dt), mask=mask)
            gl.store(c_buf_ptr + h_corner + hid, c, mask=mask)
        ready = 0  # steps of x_proj seen written (AHEAD)
        if AHEAD:
            ready = _steps_ready(ready_ptr, ready, 0)
        x_i, x_f, x_g, x_o = _gate_inputs(x_proj_ptr + g_corner, gid, mask, H, 4)
        w = _weights_in_registers(w_smem, BLOCK_B, PIECES, REG_WEIGHTS, num_warps)
        programs = gl.num_programs(0)
        t = 0
        while t < T:
            _copy_h(h_smem, h0_ptr, h_buf_ptr, t, plane_h, row0, B, H, HAS_H0, BLOCK_B, PIECE, PIECES, num_warps)
            _step_product(w, h_smem, g_smem, BLOCK_B, PIECES, REG_WEIGHTS, num_warps)
            i_t = _sigmoid(_gate(g_smem, 0, CELL) + x_i.to(gl.float32) + bias_i)
            f_t = _sigmoid(_gate(g_smem, 1, CELL) + x_f.to(gl.float32) + bias_f)
            g_t = _tanh(_gate(g_smem, 2, CELL) + x_g.to(gl.float32) + bias_g)
            o_t = _sigmoid(_gate(g_smem, 3, CELL) + x_o.to(gl.float32) + bias_o)
            c = f_t * c + i_t * g_t
            h = o_t * _tanh(c)
            gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, h.to(dt), mask=mask)
            if t + 1 == T:  # (h is not carried past the loop: registers)
                gl.store(h_n_ptr + h_corner + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
            # h published: arrive now, store and load the rest, then wait.
            if t + 1 < T:
                _arrive(counter)
            if SAVE:
                _store_gates(gates_ptr + t * plane_g + g_corner, gid, mask, H, (i_t, f_t, g_t, o_t))
                gl.store(c_buf_ptr + (t + 1) * plane_h + h_corner + hid, c, mask=mask)
            # The next step's input (no other program writes it; after the last step, the last
            # step's again), loaded outside any branch: inside one, the branch's end waited for it.
            step = gl.minimum(t + 1, T - 1)
            if AHEAD:
                ready = _steps_ready(ready_ptr, ready, step)
            x_i, x_f, x_g, x_o = _gate_inputs(x_proj_ptr + step * plane_g + g_corner, gid, mask, H, 4)
            if t + 1 < T:  # then every program's h_t
                _wait_arrivals(counter, programs * (t + 1))
            t += 1
        gl.store(c_n_ptr + h_corner + hid, c.to(c_n_ptr.dtype.element_ty), mask=mask)
