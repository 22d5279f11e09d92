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
- **the gates leave the accumulator once.** The wgmma accumulator holds gate ``g`` in warp ``g``;
  it goes through shared memory (swizzled: read back down a unit's column, unswizzled rows put
  eight lanes on one bank) straight into the layout of the cell's arithmetic, the step input's
  loads and the stores.

On an H200 (``benchmarks/results/h200/gluon-step/``, kernel alone, against the ``tl`` kernel in
the same run): 0.86-0.87x the step at FlashRNN's shape (batch 16, hidden 768, fp16 and bf16),
0.93x at batch 32, hidden 512, 0.86x at hidden 1024, 0.97x at batch 128, hidden 512; 1.02x where h
is one piece (hidden 100-128), so the plan asks for it only past one piece
(``plans.gluon_forward``).

Gluon is experimental and its API moves between Triton releases: :data:`AVAILABLE` is True only
for the releases this was written and measured against (:data:`GLUON_VERSIONS`), and everywhere
else the ``tl`` kernel runs. Gluon has no interpreter: only the CUDA tests run this kernel. No
lengths (a variable-length batch runs the ``tl`` kernel).
"""

from __future__ import annotations

import triton

GLUON_VERSIONS = ("3.6.",)

try:
    if not triton.__version__.startswith(GLUON_VERSIONS):
        raise ImportError(f"Gluon's API here is Triton {GLUON_VERSIONS}'s, not {triton.__version__}'s")
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, warpgroup_mma,
                                                                   warpgroup_mma_wait)
    AVAILABLE = True
except ImportError:
    AVAILABLE = False

BLOCK_H = 16  # hidden units a program: 4 gates x 16 = 64 rows, one wgmma's height
MAX_BLOCK_B = 32  # batch rows a program (a wgmma 16 or 32 wide)
MAX_PIECE = 256  # columns of each resident weight piece and staged piece of h


def piece_width(k_padded: int) -> int:
    """Columns of each piece at a padded reduction of ``k_padded`` (a power of 2, >= 16)."""
    return min(MAX_PIECE, k_padded)


def shared_bytes(block_b: int, hidden_size: int, k_padded: int) -> int:
    """Shared memory of one program: the weight pieces and as many pieces of h (16-bit), and the
    fp32 gate tile the accumulator passes through."""
    width = piece_width(k_padded)
    pieces = -(-hidden_size // width)
    return (4 * BLOCK_H + block_b) * pieces * width * 2 + 4 * BLOCK_H * block_b * 4


if AVAILABLE:

    @gluon.jit
    def _tanh(x):
        """tanh on the MUFU (``tanh.approx.f32``), as ``common._tanh_approx``."""
        return gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True,
                                         pack=1)

    @gluon.jit
    def _sigmoid(x):
        return 0.5 * _tanh(0.5 * x) + 0.5

    @gluon.jit
    def _load_f32(ptr, offsets, mask):
        return gl.load(ptr + offsets, mask=mask, other=0.0).to(gl.float32)

    @gluon.jit
    def _step_input(x_t, gid, mask, H: gl.constexpr):
        """Step ``t``'s input projection, gates i, f, g, o, from its ``[B, 4H]`` plane, as stored
        (16-bit; widened where used, after the barrier)."""
        return (gl.load(x_t + gid, mask=mask, other=0.0), gl.load(x_t + gid + H, mask=mask, other=0.0),
                gl.load(x_t + gid + 2 * H, mask=mask, other=0.0), gl.load(x_t + gid + 3 * H, mask=mask, other=0.0))

    @gluon.jit
    def _steps_ready(ready_ptr, step):
        """The count of steps whose input projection is written (``ready_ptr``, raised by the side
        stream after each chunk: ``ops/projection.py``, ``project_ahead``), waited for until it
        passes ``step``; acquired, so the step's input read after it is the chunk's."""
        n = gl.atomic_add(ready_ptr, 0, sem="acquire", scope="gpu")
        while n <= step:
            n = gl.atomic_add(ready_ptr, 0, sem="acquire", scope="gpu")
        return n

    @gluon.jit
    def _bias(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS: gl.constexpr):
        """``b_ih + b_hh`` at these offsets as an fp32 ``[BLOCK_H, 1]`` column (0 without biases),
        loaded once and held for every step."""
        if HAS_BIAS:
            b = _load_f32(b_ih_ptr, units, mask) + _load_f32(b_hh_ptr, units, mask)
        else:
            b = gl.zeros_like(units, dtype=gl.float32)
        return b[:, None]

    @gluon.jit(do_not_specialize=["T", "B"])
    def lstm_forward_gluon_kernel(
        x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, c0_ptr,
        h_buf_ptr, h_n_ptr, c_n_ptr, c_buf_ptr, gates_ptr, counters_ptr, ready_ptr,
        T, B,
        H: gl.constexpr, HAS_BIAS: gl.constexpr, HAS_H0: gl.constexpr, HAS_C0: gl.constexpr, SAVE: gl.constexpr,
        AHEAD: gl.constexpr, BLOCK_B: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr,
        num_warps: gl.constexpr,
    ):
        """``lstm_forward_kernel``'s arguments and results (no lengths, no split operands): h_1..h_T
        into ``h_buf[1:]`` (``h_buf[0]`` = h0 and ``c_buf``, ``gates`` only when ``SAVE``), ``h_n``
        and ``c_n``; grid (H / 16 programs, batch blocks of ``BLOCK_B`` rows), all resident.
        ``counters_ptr``: one int32 arrival counter per batch block, zero at launch and left
        non-zero (unlike the ``tl`` kernels', which the last program out zeroes: that exit count,
        whose result decides a branch after the loop, took this kernel from 80-146 registers a
        thread to 245-255, spilling 456 bytes at hidden 1024, batch 32; sm_90, Triton 3.6. So the
        caller gives it zeroed counters of its own, one memset a call). ``AHEAD``: ``x_proj`` is
        being written while the kernel runs, in chunks of steps, and ``ready_ptr`` (int32, zero at
        launch) counts the steps written; step t's input is read once the count passes t. Without
        ``AHEAD`` ``ready_ptr`` is not read."""
        dt: gl.constexpr = w_hh_ptr.dtype.element_ty
        BH: gl.constexpr = 16
        ROWS: gl.constexpr = 4 * BH
        # Loads of weights and h: 8 contiguous 16-bit values (16 bytes) a thread.
        LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
        # The cell's tiles [units, batch rows]: units are contiguous in memory, so they run down a thread.
        CELL: gl.constexpr = gl.BlockedLayout([2, 1], [8, 4], [1, num_warps], [0, 1])
        ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, BLOCK_B, 16])
        W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([ROWS, PIECE], dt)
        H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_B, PIECE], dt)
        G_SMEM: gl.constexpr = gl.SwizzledSharedLayout(2, 1, 8, [1, 0])
        # Tile offsets are compile-time constants (aranges from 0) and the program's corner goes into
        # the scalar base pointers: offsets that depended on the program ids took a register each
        # (per 16-byte vector), and spilled h through local memory every step.
        unit0 = gl.program_id(0) * BH
        row0 = gl.program_id(1) * BLOCK_B
        counter = counters_ptr + gl.program_id(1)

        # The stacked tile (row m: gate m // 16, unit unit0 + m % 16), resident for every step;
        # columns past H are zeros (and so are h's), so a padded piece adds nothing. Loaded a gate's
        # 16 rows at a time: a whole piece at once held 128 values a thread.
        um = gl.arange(0, BH, layout=gl.SliceLayout(1, LOAD))
        kw = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
        w_smem = gl.allocate_shared_memory(dt, [PIECES, ROWS, PIECE], W_SMEM)
        for i in gl.static_range(PIECES):
            k = i * PIECE + kw
            for gate in gl.static_range(4):
                w = gl.load(w_hh_ptr + (gate * H + unit0) * H + um[:, None] * H + k[None, :],
                            mask=(um < H - unit0)[:, None] & (k < H)[None, :], other=0.0)
                w_smem.index(i).slice(gate * BH, BH, dim=0).store(w)
        # One buffer per piece of h, not one indexed: the compiler's barrier analysis then puts no
        # CTA barrier between the pieces' stores.
        h_smem = ()
        for i in gl.static_range(PIECES):
            h_smem = h_smem + (gl.allocate_shared_memory(dt, [BLOCK_B, PIECE], H_SMEM), )
        g_smem = gl.allocate_shared_memory(gl.float32, [ROWS, BLOCK_B], G_SMEM)
        fence_async_shared()

        hb = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(1, LOAD))
        kh = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
        u = gl.arange(0, BH, layout=gl.SliceLayout(1, CELL))
        b = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(0, CELL))
        unit_mask = u < H - unit0
        mask = unit_mask[:, None] & (b < B - row0)[None, :]
        hid = b[None, :] * H + u[:, None]  # into a [B, H] plane, from the program's corner
        gid = b[None, :] * (4 * H) + u[:, None]  # gate i into a [B, 4H] plane, from the corner
        plane_h = B.to(gl.int64) * H
        plane_g = B.to(gl.int64) * (4 * H)
        h_corner = row0 * H + unit0
        g_corner = row0 * (4 * H) + unit0
        bias_i = _bias(b_ih_ptr + unit0, b_hh_ptr + unit0, u, unit_mask, HAS_BIAS)
        bias_f = _bias(b_ih_ptr + H + unit0, b_hh_ptr + H + unit0, u, unit_mask, HAS_BIAS)
        bias_g = _bias(b_ih_ptr + 2 * H + unit0, b_hh_ptr + 2 * H + unit0, u, unit_mask, HAS_BIAS)
        bias_o = _bias(b_ih_ptr + 3 * H + unit0, b_hh_ptr + 3 * H + unit0, u, unit_mask, HAS_BIAS)
        zero = gl.zeros([BH, BLOCK_B], gl.float32, CELL)
        c = _load_f32(c0_ptr + h_corner, hid, mask) if HAS_C0 else zero  # fp32 cell state, never leaves the chip
        if SAVE:  # backward reads h_{t-1} and c_{t-1} of every step
            h0 = _load_f32(h0_ptr + h_corner, hid, mask) if HAS_H0 else zero
            gl.store(h_buf_ptr + h_corner + hid, h0.to(dt), mask=mask)
            gl.store(c_buf_ptr + h_corner + hid, c, mask=mask)
        ready = T  # steps of x_proj written (all, unless AHEAD)
        if AHEAD:
            ready = _steps_ready(ready_ptr, 0)
        x_i, x_f, x_g, x_o = _step_input(x_proj_ptr + g_corner, gid, mask, H)
        programs = gl.num_programs(0)
        t = 0
        while t < T:
            # h_{t-1} of every program, through L2 (.cg: an L1 line from an earlier step would be
            # stale); h0 at step 0, or nothing (the recurrent term is zero). Every piece's load is
            # issued before any store into shared memory waits for its data.
            if HAS_H0:
                src = gl.where(t == 0, h0_ptr, h_buf_ptr + t * plane_h) + row0 * H
                live = hb < B - row0
            else:
                src = h_buf_ptr + t * plane_h + row0 * H
                live = hb < gl.where(t > 0, B - row0, 0)
            # Straight into shared memory (cp.async, through L2 only): loaded into registers and
            # stored, ptxas interleaved the stores with the loads, each store waiting for its load
            # before the next loads issued (two round trips to L2 instead of one: trace.py).
            for i in gl.static_range(PIECES):
                col = i * PIECE + kh  # (not k: a name the loop shares with the code before it is carried)
                if H % PIECE == 0:  # every column real: the rows' mask alone (a column mask cost registers)
                    h_mask = live[:, None]
                else:
                    h_mask = live[:, None] & (col < H)[None, :]
                async_copy.async_copy_global_to_shared(h_smem[i], src + hb[:, None] * H + col[None, :], mask=h_mask,
                                                       cache_modifier=".cg")
            async_copy.commit_group()
            async_copy.wait_group(0)
            fence_async_shared()
            gl.thread_barrier()
            acc = gl.zeros([ROWS, BLOCK_B], gl.float32, ACC)
            for i in gl.static_range(PIECES):
                acc = warpgroup_mma(w_smem.index(i), h_smem[i].permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            # The gates leave the accumulator (a warp per gate) once, through shared memory.
            g_smem.store(acc)
            gl.thread_barrier()
            i_t = _sigmoid(g_smem.slice(0, BH, dim=0).load(CELL) + x_i.to(gl.float32) + bias_i)
            f_t = _sigmoid(g_smem.slice(BH, BH, dim=0).load(CELL) + x_f.to(gl.float32) + bias_f)
            g_t = _tanh(g_smem.slice(2 * BH, BH, dim=0).load(CELL) + x_g.to(gl.float32) + bias_g)
            o_t = _sigmoid(g_smem.slice(3 * BH, BH, dim=0).load(CELL) + x_o.to(gl.float32) + bias_o)
            c = f_t * c + i_t * g_t
            h = o_t * _tanh(c)
            gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, h.to(dt), mask=mask)
            if t + 1 == T:  # (h is not carried past the loop: registers)
                gl.store(h_n_ptr + h_corner + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)
            # h published: arrive now (every thread's store first), store and load the rest, then wait.
            if t + 1 < T:
                gl.thread_barrier()
                gl.atomic_add(counter, 1, sem="release", scope="gpu")
            if SAVE:
                s_t = gates_ptr + t * plane_g + g_corner
                gl.store(s_t + gid, i_t, mask=mask)
                gl.store(s_t + gid + H, f_t, mask=mask)
                gl.store(s_t + gid + 2 * H, g_t, mask=mask)
                gl.store(s_t + gid + 3 * H, o_t, mask=mask)
                gl.store(c_buf_ptr + (t + 1) * plane_h + h_corner + hid, c, mask=mask)
            # The next step's input (no other program writes it; after the last step, the last
            # step's again), loaded outside any branch: inside one, the branch's end waited for it.
            step = gl.minimum(t + 1, T - 1)
            if AHEAD:
                if step >= ready:  # (a register compare on most steps: the chunks run well ahead)
                    ready = _steps_ready(ready_ptr, step)
            x_i, x_f, x_g, x_o = _step_input(x_proj_ptr + step * plane_g + g_corner, gid, mask, H)
            if t + 1 < T:  # then every program's h_t
                while gl.atomic_add(counter, 0, sem="acquire", scope="gpu") < programs * (t + 1):
                    pass
                gl.thread_barrier()
            t += 1
        gl.store(c_n_ptr + h_corner + hid, c.to(c_n_ptr.dtype.element_ty), mask=mask)
