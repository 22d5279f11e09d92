"""What the Gluon forward kernels share (``ops/lstm/gluon.py``, ``ops/gru/gluon.py``): the guard on
Triton's release, the plan's sizes and shared memory, and the pieces of a step as ``@gluon.jit``
functions (inlined where called, as ``tl``'s are).

The plan, one program per :data:`BLOCK_H` hidden units and up to :data:`MAX_BLOCK_B` batch rows
(``docs/kernels.md``, "The LSTM forward in Gluon"): the stacked tile of ``W_hh``, four gate blocks
of 16 rows (the GRU's fourth zeros, as the ``tl`` kernels pad it), resident in shared memory in
pieces of :func:`piece_width` columns; each step h_{t-1} copied from L2 into a shared buffer per
piece (``cp.async``), the pieces' wgmma chains issued asynchronously with one wait (the weights
read by wgmma from registers where ``REG_WEIGHTS``: :func:`_weights_in_registers`), and the
accumulator stored once into swizzled shared memory, from where each gate is read in the cell's
layout; h exchanged through global memory with an atomic-counter grid barrier whose counters the
caller zeroes (the kernels leave them counted).

Gluon is experimental and its API moves between Triton releases: :data:`AVAILABLE` is True only
for the releases the kernels were written and measured against (:data:`GLUON_VERSIONS`), and
everywhere else the ``tl`` kernels run. Gluon has no interpreter: only the CUDA tests run these.
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

BLOCK_H = 16  # hidden units a program: 4 gate blocks x 16 = 64 rows, one wgmma's height
MAX_BLOCK_B = 32  # batch rows a program (a wgmma 16 or 32 wide)
MAX_PIECE = 256  # columns of each resident weight piece and staged piece of h
GATE_BLOCKS = 4  # gate blocks of the stacked tile (the LSTM's 4; the GRU's 3 and a zero block)


def piece_width(k_padded: int) -> int:
    """Columns of each piece at a padded reduction of ``k_padded`` (a power of 2, >= 16)."""
    return min(MAX_PIECE, k_padded)


def pieces(hidden_size: int, k_padded: int) -> int:
    """Pieces of :func:`piece_width` columns covering h (the last one partial where they overrun)."""
    return -(-hidden_size // piece_width(k_padded))


def shared_bytes(block_b: int, hidden_size: int, k_padded: int) -> int:
    """Shared memory of one program: the weight pieces and as many pieces of h (16-bit), and the
    fp32 gate tile the accumulator passes through."""
    width = piece_width(k_padded)
    rows = GATE_BLOCKS * BLOCK_H
    return (rows + block_b) * pieces(hidden_size, k_padded) * width * 2 + rows * block_b * 4


if AVAILABLE:
    _BH = gl.constexpr(BLOCK_H)
    _GATE_BLOCKS = gl.constexpr(GATE_BLOCKS)
    _ROWS = gl.constexpr(GATE_BLOCKS * BLOCK_H)

    @gluon.constexpr_function
    def load_layout(num_warps):
        """Loads of weights and h: 8 contiguous 16-bit values (16 bytes) a thread."""
        return gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])

    @gluon.constexpr_function
    def cell_layout(num_warps):
        """The cell's tiles ``[units, batch rows]``: units are contiguous in memory, so they run
        down a thread."""
        return gl.BlockedLayout([2, 1], [8, 4], [1, num_warps], [0, 1])

    @gluon.jit
    def _tanh(x):
        """tanh on the MUFU (``tanh.approx.f32``), as ``common._tanh_approx``."""
        return gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True,
                                         pack=1)

    @gluon.jit
    def _sigmoid(x):
        return 0.5 * _tanh(0.5 * x) + 0.5

    @gluon.jit
    def _opaque(x):
        """``x`` (fp32) through a register copy the compiler cannot see through (``mov.b32``, which
        ptxas folds away: the conversion after it reads ``x``'s own registers). For a value carried
        from step to step and stored in 16 bits each step: the GRU's h converted straight from the
        carried value took its kernel from 70-128 registers a thread to 202-255, spilling 24-104
        bytes at hidden 1024, batch 32 (ptxas kept dozens of copies of the wgmma descriptors in
        vector registers, most never read; sm_90, Triton 3.6), though the PTX with the copy
        differs by little more than the copy."""
        return gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True, pack=1)

    @gluon.jit
    def _wait_prior(PDL: gl.constexpr):
        """``common._wait_prior`` in Gluon: with ``PDL``, wait for the launch ahead of this one
        (``griddepcontrol.wait``) before reading anything it writes."""
        if PDL:
            gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _load_f32(ptr, offsets, mask):
        return gl.load(ptr + offsets, mask=mask, other=0.0).to(gl.float32)

    @gluon.jit
    def _bias_vector(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS: gl.constexpr, BOTH: gl.constexpr):
        """``b_ih (+ b_hh if BOTH)`` at these offsets, fp32, in ``units``' layout (0 without biases),
        loaded once and held for every step (the FMA forwards' ``[K_PAD]``, ``ops/gluon_fma.py``)."""
        if HAS_BIAS:
            if BOTH:
                b = _load_f32(b_ih_ptr, units, mask) + _load_f32(b_hh_ptr, units, mask)
            else:
                b = _load_f32(b_ih_ptr, units, mask)
        else:
            b = gl.zeros_like(units, dtype=gl.float32)
        return b

    @gluon.jit
    def _bias(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS: gl.constexpr, BOTH: gl.constexpr):
        """:func:`_bias_vector` as an fp32 ``[BLOCK_H, 1]`` column (the tensor-core forwards' cell tile)."""
        return _bias_vector(b_ih_ptr, b_hh_ptr, units, mask, HAS_BIAS, BOTH)[:, None]

    @gluon.jit
    def _cell_tile(unit0, row0, B, H: gl.constexpr, BLOCK_B: gl.constexpr, CELL: gl.constexpr):
        """The program's cell tile, ``[BLOCK_H, BLOCK_B]`` from its corner (unit ``unit0``, batch row
        ``row0``): ``(u, b, unit_mask, mask)``, the units and rows as compile-time aranges from 0
        (the corner goes into the callers' scalar base pointers: offsets that depended on the
        program ids took a register each, per 16-byte vector, and spilled h every step), the
        units' mask ``[BLOCK_H]`` and the tile's ``[BLOCK_H, BLOCK_B]``."""
        u = gl.arange(0, _BH, layout=gl.SliceLayout(1, CELL))
        b = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(0, CELL))
        unit_mask = u < H - unit0
        return u, b, unit_mask, unit_mask[:, None] & (b < B - row0)[None, :]

    @gluon.jit
    def _gate_inputs(x_t, gid, mask, H: gl.constexpr, GATES: gl.constexpr):
        """A step's input projection, one tile per gate, from its ``[B, GATES*H]`` plane (``gid``:
        the first gate's offsets), as stored (16-bit; widened where used, after the barrier)."""
        x = ()
        for gate in gl.static_range(GATES):
            x = x + (gl.load(x_t + gid + gate * H, mask=mask, other=0.0), )
        return x

    @gluon.jit
    def _steps_ready(ready_ptr, ready, step):
        """The count of steps whose input projection is written (``ready_ptr``, raised by the side
        stream after each chunk: ``ops/projection.py``, ``project_ahead``), once it passes
        ``step``: ``ready``, the count last seen, where it does (a register compare on most steps:
        the chunks run well ahead), else read again until it does; acquired, so the step's input
        read after it is the chunk's."""
        if step >= ready:
            ready = gl.atomic_add(ready_ptr, 0, sem="acquire", scope="gpu")
            while ready <= step:
                ready = gl.atomic_add(ready_ptr, 0, sem="acquire", scope="gpu")
        return ready

    @gluon.jit
    def _store_gates(ptr, offsets, mask, H: gl.constexpr, gates):
        """Tiles ``gates`` (a tuple, one per gate) into a ``[B, len(gates) * H]`` plane at ``ptr``
        (``offsets``: the first gate's)."""
        for gate in gl.static_range(len(gates)):
            gl.store(ptr + offsets + gate * H, gates[gate], mask=mask)

    @gluon.jit
    def _resident_buffers(w_ptr, units_left, H: gl.constexpr, GATES: gl.constexpr, BLOCK_B: gl.constexpr,
                          PIECE: gl.constexpr, PIECES: gl.constexpr, num_warps: gl.constexpr):
        """The program's shared memory, its weights loaded: ``(w_smem, h_smem, g_smem)``.

        ``w_smem [PIECES, 64, PIECE]``: the stacked tile (row m: gate m // 16, the program's unit
        m % 16), resident for every step. ``w_ptr``: ``W_hh [GATES*H, H]`` at the program's first
        unit's row; ``units_left``: the units from there on (the last program's tile is partial).
        Gate blocks past ``GATES`` (the GRU's fourth) and columns past H are zeros, so a padded
        piece adds nothing. Loaded a gate's 16 rows at a time: a whole piece at once held 128
        values a thread.

        ``h_smem``: one ``[BLOCK_B, PIECE]`` buffer per piece of h, not one indexed: the compiler's
        barrier analysis then puts no CTA barrier between the pieces' copies. ``g_smem [64,
        BLOCK_B]`` fp32: the step's product, swizzled (read back down a unit's column, unswizzled
        rows put eight lanes on one bank)."""
        dt: gl.constexpr = w_ptr.dtype.element_ty
        LOAD: gl.constexpr = load_layout(num_warps)
        W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([_ROWS, PIECE], dt)
        H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_B, PIECE], dt)
        G_SMEM: gl.constexpr = gl.SwizzledSharedLayout(2, 1, 8, [1, 0])
        um = gl.arange(0, _BH, layout=gl.SliceLayout(1, LOAD))
        kw = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
        w_smem = gl.allocate_shared_memory(dt, [PIECES, _ROWS, PIECE], W_SMEM)
        for i in gl.static_range(PIECES):
            k = i * PIECE + kw
            for gate in gl.static_range(_GATE_BLOCKS):
                if gate < GATES:
                    w = gl.load(w_ptr + gate * H * H + um[:, None] * H + k[None, :],
                                mask=(um < units_left)[:, None] & (k < H)[None, :], other=0.0)
                else:
                    w = gl.zeros([_BH, PIECE], dt, LOAD)
                w_smem.index(i).slice(gate * _BH, _BH, dim=0).store(w)
        h_smem = ()
        for i in gl.static_range(PIECES):
            h_smem = h_smem + (gl.allocate_shared_memory(dt, [BLOCK_B, PIECE], H_SMEM), )
        g_smem = gl.allocate_shared_memory(gl.float32, [_ROWS, BLOCK_B], G_SMEM)
        fence_async_shared()
        return w_smem, h_smem, g_smem

    @gluon.jit
    def _copy_h(h_smem, h0_ptr, h_buf_ptr, t, plane_h, row0, B, H: gl.constexpr, HAS_H0: gl.constexpr,
                BLOCK_B: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr, num_warps: gl.constexpr):
        """h_{t-1} of the program's batch rows, every unit, into ``h_smem``, waited for: from
        ``h_buf[t]`` (``[T+1, B, H]``; ``plane_h = B * H``), h0 at step 0, or zeros there without
        ``HAS_H0``. Through L2 (.cg: an L1 line from an earlier step would be stale), straight
        into shared memory (``cp.async``), every piece's copy issued before the one wait: loaded
        into registers and stored, ptxas interleaved the stores with the loads, each store waiting
        for its load before the next loads issued (two round trips to L2 instead of one:
        ``probes/trace.py``)."""
        LOAD: gl.constexpr = load_layout(num_warps)
        hb = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(1, LOAD))
        kh = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
        if HAS_H0:
            src = gl.where(t == 0, h0_ptr, h_buf_ptr + t * plane_h) + row0 * H
            live = hb < B - row0
        else:  # the rows' mask all false at step 0: zeros (the recurrent term is zero)
            src = h_buf_ptr + t * plane_h + row0 * H
            live = hb < gl.where(t > 0, B - row0, 0)
        for i in gl.static_range(PIECES):
            col = i * PIECE + kh
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

    @gluon.constexpr_function
    def acc_layout(block_b, num_warps):
        """The step product's accumulator ``[64, BLOCK_B]``: one warpgroup's wgmma, gate g in warp g."""
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, block_b, 16])

    @gluon.jit
    def _weights_in_registers(w_smem, BLOCK_B: gl.constexpr, PIECES: gl.constexpr, REG_WEIGHTS: gl.constexpr,
                              num_warps: gl.constexpr):
        """Every piece of the resident tile read once from shared memory into registers, as wgmma's
        left operand (``REG_WEIGHTS``; 64 registers a thread a piece), else ``w_smem`` itself. Read
        from registers, a step's 48 wgmma of 64 x 16 x 16 at FlashRNN's shape took 0.39 µs against
        0.58 from shared memory, where each reads 2 KB of weights beside h's 512 bytes (H100,
        ``results/h100/rs-wgmma/``); only with every piece in registers (one of three: 0.60)."""
        if REG_WEIGHTS:
            A: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout(BLOCK_B, num_warps), k_width=2)
            w = ()
            for i in gl.static_range(PIECES):
                w = w + (w_smem.index(i).load(A), )
        else:
            w = w_smem
        return w

    @gluon.jit
    def _step_product(w, h_smem, g_smem, BLOCK_B: gl.constexpr, PIECES: gl.constexpr, REG_WEIGHTS: gl.constexpr,
                      num_warps: gl.constexpr):
        """The step's recurrent product ``W_stack h_{t-1}`` (``[64, BLOCK_B]`` fp32) into ``g_smem``,
        ready to read (:func:`_gate`): the pieces' wgmma chains issued asynchronously, one after
        another, with one wait (``tl.dot`` outside a pipelined loop waits for each); the
        accumulator (gate g in warp g) leaves its registers once. ``w``: what
        :func:`_weights_in_registers` returned (a tuple of register pieces where ``REG_WEIGHTS``)."""
        acc = gl.zeros([_ROWS, BLOCK_B], gl.float32, acc_layout(BLOCK_B, num_warps))
        for i in gl.static_range(PIECES):
            if REG_WEIGHTS:
                acc = warpgroup_mma(w[i], h_smem[i].permute((1, 0)), acc, is_async=True)
            else:
                acc = warpgroup_mma(w.index(i), h_smem[i].permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        g_smem.store(acc)
        gl.thread_barrier()

    @gluon.jit
    def _gate(g_smem, gate: gl.constexpr, CELL: gl.constexpr):
        """Gate ``gate``'s recurrent term, ``[BLOCK_H, BLOCK_B]`` fp32 in the cell's layout."""
        return g_smem.slice(gate * _BH, _BH, dim=0).load(CELL)

    @gluon.jit
    def _arrive(counter):
        """h_t published: every thread's store first, then one arrival at the batch block's counter."""
        gl.thread_barrier()
        gl.atomic_add(counter, 1, sem="release", scope="gpu")

    @gluon.jit
    def _wait_arrivals(counter, target):
        """Wait until ``target`` arrivals are counted (every program's h_t published), acquired."""
        while gl.atomic_add(counter, 0, sem="acquire", scope="gpu") < target:
            pass
        gl.thread_barrier()
