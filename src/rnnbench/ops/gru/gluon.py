"""The GRU's forward kernel in Gluon, Triton's lower-level language, for 16-bit weights on Hopper.

The same recurrence, buffers and saved values as :func:`rnnbench.ops.gru.kernels.gru_forward_kernel`
(its module docstring: gates r, z, n, the reset gate applied after the recurrent product,
``hn = W_hn h + b_hn``, ``n = tanh(xn + b_in + r hn)``, ``h_t = (1 - z) n + z h_{t-1}``; the
``tl`` backward reads what this saves), on the plan of the LSTM's Gluon forward
(``ops/lstm/gluon.py``; its pieces are ``ops/gluon_common.py``'s): one program per 16 hidden units
and 16 or 32 batch rows, the 64-row stacked tile of ``W_hh`` resident in shared memory (gate
blocks r, z, n and a zero block, as the ``tl`` kernel pads it), h_{t-1} copied from L2 into a
shared buffer per piece, one wait for the step's product, the gates out of the accumulator once,
the atomic-counter grid barrier, tanh and sigmoid on the MUFU. The program's own h_{t-1} for the
cell is fp32, carried in registers (the exchanged h is 16-bit: it feeds the product only).

On the H100 (``benchmarks/results/h100/gluon-gru``, through the engine against the ``tl``
kernel): graphed forwards 0.87x the time at FlashRNN's shape (fp16 and bf16), 0.89x at batch 32,
hidden 1024, 1.00x at batch 128, hidden 512. The plan takes it where it takes the LSTM's
(``plans.gluon_forward``). Exists only where :data:`~rnnbench.ops.gluon_common.AVAILABLE` (Triton
3.6); no interpreter (only the CUDA tests run it); no lengths (a variable-length batch runs the
``tl`` kernel).
"""

from __future__ import annotations

from ..gluon_common import AVAILABLE

if AVAILABLE:
    from ..gluon_common import (_arrive, _BH, _bias, _cell_tile, _copy_h, _gate, _gate_inputs, _load_f32, _opaque,
                                _resident_buffers, _sigmoid, _step_product, _steps_ready, _store_gates, _tanh,
                                _wait_arrivals, _weights_in_registers, cell_layout, gl, gluon)

    @gluon.jit(do_not_specialize=["T", "B"])
    def gru_forward_gluon_kernel(
        x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr,
        h_buf_ptr, h_n_ptr, saved_ptr, counters_ptr, ready_ptr,
        T, B,
        H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr, SAVE: gl.constexpr, AHEAD: gl.constexpr,
        BLOCK_B: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr, REG_WEIGHTS: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        """``gru_forward_kernel``'s arguments and results (no lengths, no split operands):
        ``x_proj [T, B, 3H]``, ``w_hh [3H, H]``, biases ``[3H]``, h0 ``[B, H]``; h_1..h_T into
        ``h_buf[1:]`` (``[T+1, B, H]``; ``h_buf[0]`` = h0 and ``saved [T, B, 4H]`` fp32, holding
        r, z, n, hn, only when ``SAVE``) and ``h_n``; grid (H / 16 programs, batch blocks of
        ``BLOCK_B`` rows), all resident. ``counters_ptr``: one int32 arrival counter per batch
        block, zero at launch and left non-zero (as the LSTM's Gluon kernel: the caller zeroes
        them). ``AHEAD``: ``x_proj`` is being written while the kernel runs and ``ready_ptr``
        (int32, zero at launch) counts the steps written; step t's input is read once the count
        passes t. Without ``AHEAD`` ``ready_ptr`` is not read."""
        dt: gl.constexpr = w_hh_ptr.dtype.element_ty
        CELL: gl.constexpr = cell_layout(num_warps)
        unit0 = gl.program_id(0) * _BH
        row0 = gl.program_id(1) * BLOCK_B
        counter = counters_ptr + gl.program_id(1)
        w_smem, h_smem, g_smem = _resident_buffers(w_hh_ptr + unit0 * H, H - unit0, H, 3, BLOCK_B, PIECE, PIECES,
                                                   num_warps)
        u, b, unit_mask, mask = _cell_tile(unit0, row0, B, H, BLOCK_B, CELL)
        hid = b[None, :] * H + u[:, None]  # into a [B, H] plane, from the program's corner
        gid = b[None, :] * (3 * H) + u[:, None]  # gate r into a [B, 3H] plane, from the corner
        sid = b[None, :] * (4 * H) + u[:, None]  # r into a [B, 4H] plane of saved values, from the corner
        plane_h = B.to(gl.int64) * H
        plane_g = B.to(gl.int64) * (3 * H)
        plane_s = B.to(gl.int64) * (4 * H)
        h_corner = row0 * H + unit0
        g_corner = row0 * (3 * H) + unit0
        s_corner = row0 * (4 * H) + unit0
        bias_r = _bias(b_ih_ptr + unit0, b_hh_ptr + unit0, u, unit_mask, HAS_BIAS, True)
        bias_z = _bias(b_ih_ptr + H + unit0, b_hh_ptr + H + unit0, u, unit_mask, HAS_BIAS, True)
        bias_xn = _bias(b_ih_ptr + 2 * H + unit0, b_hh_ptr + 2 * H + unit0, u, unit_mask, HAS_BIAS, False)  # b_in
        bias_hn = _bias(b_hh_ptr + 2 * H + unit0, b_ih_ptr + 2 * H + unit0, u, unit_mask, HAS_BIAS, False)  # b_hn
        # The program's slice of h_{t-1} in fp32, carried from step to step (the cell's own, as the
        # tl kernel's; the exchange buffer's 16 bits feed the product only).
        h = _load_f32(h0_ptr + h_corner, hid, mask) if HAS_H0 else gl.zeros([_BH, BLOCK_B], gl.float32, CELL)
        if SAVE:  # backward reads h_{t-1} of every step
            gl.store(h_buf_ptr + h_corner + hid, h.to(dt), mask=mask)
        ready = 0  # steps of x_proj seen written (AHEAD)
        if AHEAD:
            ready = _steps_ready(ready_ptr, ready, 0)
        x_r, x_z, x_n = _gate_inputs(x_proj_ptr + g_corner, gid, mask, H, 3)
        w = _weights_in_registers(w_smem, BLOCK_B, PIECES, REG_WEIGHTS, num_warps)
        programs = gl.num_programs(0)
        t = 0
        while t < T:
            _copy_h(h_smem, h0_ptr, h_buf_ptr, t, plane_h, row0, B, H, HAS_H0, BLOCK_B, PIECE, PIECES, num_warps)
            _step_product(w, h_smem, g_smem, BLOCK_B, PIECES, REG_WEIGHTS, num_warps)
            r = _sigmoid(_gate(g_smem, 0, CELL) + x_r.to(gl.float32) + bias_r)
            z = _sigmoid(_gate(g_smem, 1, CELL) + x_z.to(gl.float32) + bias_z)
            hn = _gate(g_smem, 2, CELL) + bias_hn
            n = _tanh(x_n.to(gl.float32) + bias_xn + r * hn)
            h = n + z * (h - n)
            # (Through a copy: the carried h converted itself cost the kernel its registers: _opaque.)
            gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, _opaque(h).to(dt), mask=mask)
            # h published: arrive now, store and load the rest, then wait.
            if t + 1 < T:
                _arrive(counter)
            if SAVE:
                _store_gates(saved_ptr + t * plane_s + s_corner, sid, mask, H, (r, z, n, hn))
            # The next step's input (after the last step, the last step's again), outside any
            # branch: inside one, the branch's end waited for it.
            step = gl.minimum(t + 1, T - 1)
            if AHEAD:
                ready = _steps_ready(ready_ptr, ready, step)
            x_r, x_z, x_n = _gate_inputs(x_proj_ptr + step * plane_g + g_corner, gid, mask, H, 3)
            if t + 1 < T:  # then every program's h_t
                _wait_arrivals(counter, programs * (t + 1))
            t += 1
        gl.store(h_n_ptr + h_corner + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
