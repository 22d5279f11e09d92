"""What the LSTM's and GRU's forwards on the FMA units share (``Plan.fma`` for gated cells,
``ops/lstm/fma.py``, ``ops/gru/fma.py``): one batch row a program, a thread per hidden unit, every
gate's ``W_hh^T`` on the chip for every step, partly in registers, the rest in shared memory.
Written in Gluon (Triton's lower-level language), because ``tl`` cannot hold a tile in shared
memory across steps nor say which thread holds which values.

Why: up to hidden 128 the RNN's ``W_hh`` fits in a program's registers (``ops/rnn/fma.py``), the
gated cells' three or four times as much does not (192 KB of fp32 for the GRU at hidden 128). It
fits in one multiprocessor's registers and shared memory (227 KB of it on the H100), where a thread
reading its unit's column at each k while its warp's 31 neighbours read theirs touches 32
consecutive words: one conflict-free access. Read from shared memory alone, each step reads the
whole tile once, ``GATES x K_ROWS x K_PAD`` values, bounded by shared memory's 128 bytes a clock
(about 0.78 us for the GRU at hidden 128, fp32, at 1.98 GHz): it took 1.16 us on the H100. With the
first chunks of k of every gate in registers instead (:data:`REG_VALUES`) a step took 0.77 us
there, against the tensor-core plan's 2.21 (``results/h100/gated-fma/reg-chunks``) and cuDNN's 0.79
(``compare-575b97f``, from 30 and 300 steps), with no barrier between programs and no tensor-core
chain.

Layouts (``num_warps`` warps, ``K_PAD = 32 * num_warps`` units):

- the weights: ``W_hh[g * H + j, k]`` at row k, column j of gate g's tile ``[K_ROWS, K_PAD]``, zeros
  past H in either index (``K_ROWS``: H rounded up to a chunk), in chunks of :data:`CHUNK` rows of k:
  the first :func:`reg_chunks` of every gate in the threads' registers, the rest in shared memory
  (unswizzled, one buffer a chunk).
- :func:`product_layout`: a chunk ``[CHUNK, K_PAD]`` of one gate's tile with a unit a thread and the
  chunk's k in that thread's registers, so each dot product is the thread's own chain of fused
  multiply-adds (IEEE fp32) and ends in no reduction across threads.
- ``h_smem [2, K_PAD]`` fp32: h_{t-1} for every thread to read whole (broadcast reads), two buffers so
  that a step writes h_t into one while the other is still being read: one CTA barrier a step.

Exists only where :data:`~rnnbench.ops.gluon_common.AVAILABLE` (Triton 3.6); no interpreter (only the
CUDA tests run these kernels; on CPU the plan never asks for them).
"""

from __future__ import annotations

from .gluon_common import AVAILABLE

# Values of k a thread multiplies per gate and chunk, one chain of fused multiply-adds; the chunks'
# sums are added in order. (8: hidden 100 pads to 104 rows of k; 16 would pad it to 112. Only 8 was
# timed.)
CHUNK = 8


# Weights a thread holds in registers for every step (the first chunks of k of every gate; the rest
# are read from shared memory each step). On the H100, the GRU's kernel alone at hidden 128, fp32,
# batch 32, took 1.16 us a step with no chunks in registers, 0.98 with 4 a gate, 0.77 with 6 (144
# values; sm_90: 255 registers a thread, no spills) and 0.89 with 8 (spilling), the tensor-core
# plan 2.21 (results/h100/gated-fma/reg-chunks). The LSTM's four gates take 4 chunks each.
REG_VALUES = 144


def reg_chunks(num_gates: int, hidden_size: int) -> int:
    """Chunks of k of every gate in registers: as many as :data:`REG_VALUES` holds, at most all."""
    return min(REG_VALUES // (num_gates * CHUNK), k_rows(hidden_size) // CHUNK)


def k_rows(hidden_size: int) -> int:
    """Rows of k in the shared tile: ``hidden_size`` rounded up to a chunk."""
    return -(-hidden_size // CHUNK) * CHUNK


def constexprs(num_gates: int, hidden_size: int, num_warps: int, fast_activations: bool) -> dict:
    """The FMA forward kernels' compile-time sizes for a plan of ``num_warps`` warps (a thread per
    unit: ``K_PAD`` = 32 * ``num_warps``), as the launch and ``ops/aot.py`` give them."""
    return dict(H=hidden_size, K_ROWS=k_rows(hidden_size), K_PAD=32 * num_warps,
                REG_CHUNKS=reg_chunks(num_gates, hidden_size), FAST_ACT=fast_activations, num_warps=num_warps)


def shared_bytes(num_gates: int, hidden_size: int, k_padded: int, element: int) -> int:
    """Shared memory of one program: the gates' chunks not in registers, in the weights' dtype, and
    two fp32 buffers of h."""
    chunks = k_rows(hidden_size) // CHUNK - reg_chunks(num_gates, hidden_size)
    return num_gates * chunks * CHUNK * k_padded * element + 2 * k_padded * 4


if AVAILABLE:
    from .gluon_common import _load_f32, gl, gluon

    _CHUNK = gl.constexpr(CHUNK)

    @gluon.constexpr_function
    def product_layout(num_warps):
        """A ``[_CHUNK, K_PAD]`` chunk of a gate's ``W_hh^T``: unit j in thread j, the chunk's k in its registers."""
        return gl.BlockedLayout([_CHUNK, 1], [1, 32], [1, num_warps], [0, 1])

    @gluon.constexpr_function
    def units_layout(num_warps):
        """The cell's ``[K_PAD]`` vectors: unit j in thread j."""
        return gl.SliceLayout(0, product_layout(num_warps))

    @gluon.jit
    def row_start(w_hh_ptr, h0_ptr, lengths_ptr, T, B, H: gl.constexpr, GATES: gl.constexpr, HAS_H0: gl.constexpr,
                  HAS_LENGTHS: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr, REG_CHUNKS: gl.constexpr,
                  num_warps: gl.constexpr):
        """What a program of either cell sets up before its first step, for batch row
        ``program_id(1)``: ``(w_reg, w_smem, h_smem, units, mask, length, row, plane, h)``, the weights
        on chip (:func:`weights_on_chip`), the two buffers of h (``[2, K_PAD]`` fp32), the units
        (``[K_PAD]``, one a thread) and their mask, the row's length (``T`` without lengths), its
        offset in a ``[B, H]`` plane and a plane's size (int64), and h0 as fp32 (zeros without it),
        the carried h."""
        U: gl.constexpr = units_layout(num_warps)
        b = gl.program_id(1)
        w_reg, w_smem = weights_on_chip(w_hh_ptr, H, GATES, K_ROWS, K_PAD, REG_CHUNKS, num_warps)
        h_smem = gl.allocate_shared_memory(gl.float32, [2, K_PAD], gl.SwizzledSharedLayout(1, 1, 1, [0]))
        units = gl.arange(0, K_PAD, layout=U)
        mask = units < H
        if HAS_LENGTHS:
            length = gl.load(lengths_ptr + b)
        else:
            length = T
        row = b.to(gl.int64) * H
        plane = B.to(gl.int64) * H
        if HAS_H0:
            h = _load_f32(h0_ptr + row, units, mask)
        else:
            h = gl.zeros([K_PAD], gl.float32, U)
        return w_reg, w_smem, h_smem, units, mask, length, row, plane, h

    @gluon.jit
    def publish_h(h_smem, h_buf_ptr, h, t, running, plane, row, units, mask):
        """h_t to every thread (into the buffer not read at step t) and into ``h_buf[t+1]`` (zeros
        past the row's length, as the ``tl`` kernels store it), in ``h_buf``'s dtype."""
        h_smem.index((t + 1) % 2).store(h)
        gl.store(h_buf_ptr + (t + 1) * plane + row + units, gl.where(running, h, 0.0).to(h_buf_ptr.dtype.element_ty),
                 mask=mask)

    @gluon.jit
    def gate_inputs(x_proj_ptr, t, plane, row, units, mask, H: gl.constexpr, GATES: gl.constexpr):
        """Step ``t``'s input projection, one ``[K_PAD]`` vector a gate (a tuple), as stored (widened
        where used): from the ``[T, B, GATES*H]`` buffer, ``plane = B * GATES * H``, ``row = b * GATES * H``."""
        x_t = x_proj_ptr + t * plane + row + units
        x = ()
        for g in gl.static_range(GATES):
            x = x + (gl.load(x_t + g * H, mask=mask, other=0.0), )
        return x

    @gluon.jit
    def weights_on_chip(w_hh_ptr, H: gl.constexpr, GATES: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr,
                        REG_CHUNKS: gl.constexpr, num_warps: gl.constexpr):
        """``W_hh [GATES*H, H]`` (row-major) transposed onto the chip, a chunk ``[CHUNK, K_PAD]`` of
        one gate at a time: thread j reads the chunk's values of row j (contiguous). Returns
        ``(w_reg, w_smem)``: the first ``REG_CHUNKS`` chunks of every gate in registers (fp32; gate
        g's chunk c at ``g * REG_CHUNKS + c``), the rest in shared memory, one buffer each (shared
        memory's shapes must be powers of 2, and the compiler's barrier analysis then puts no CTA
        barrier between their stores; gate g's chunk c at ``g * (K_ROWS // CHUNK - REG_CHUNKS) + c -
        REG_CHUNKS``), written down column j, so a warp's stores touch consecutive words."""
        L: gl.constexpr = product_layout(num_warps)
        SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
        j = gl.arange(0, K_PAD, layout=gl.SliceLayout(0, L))
        kc = gl.arange(0, _CHUNK, layout=gl.SliceLayout(1, L))
        w_reg = ()
        w_smem = ()
        for g in gl.static_range(GATES):
            for c in gl.static_range(K_ROWS // _CHUNK):
                k = c * _CHUNK + kc
                w = gl.load(w_hh_ptr + (g * H + j[None, :]) * H + k[:, None],
                            mask=(j < H)[None, :] & (k < H)[:, None], other=0.0)
                if c < REG_CHUNKS:
                    w_reg = w_reg + (w.to(gl.float32), )
                else:
                    buf = gl.allocate_shared_memory(w_hh_ptr.dtype.element_ty, [_CHUNK, K_PAD], SMEM)
                    buf.store(w)
                    w_smem = w_smem + (buf, )
        return w_reg, w_smem

    @gluon.jit
    def gate_products(w_reg, w_smem, h_prev, GATES: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr,
                      REG_CHUNKS: gl.constexpr, num_warps: gl.constexpr):
        """The step's recurrent products ``W_hh h_{t-1}``, one fp32 ``[K_PAD]`` vector a gate (a
        tuple), from :func:`weights_on_chip`'s chunks and ``h_prev`` (``[K_PAD]`` fp32 in shared
        memory, read whole by every thread): each chunk of k is the thread's own chain per gate, the
        chunks' sums added in order."""
        L: gl.constexpr = product_layout(num_warps)
        CHUNKS: gl.constexpr = K_ROWS // _CHUNK
        acc = ()
        for g in gl.static_range(GATES):
            acc = acc + (gl.zeros([K_PAD], gl.float32, gl.SliceLayout(0, L)), )
        for c in gl.static_range(CHUNKS):
            h_k = h_prev.slice(c * _CHUNK, _CHUNK).load(gl.SliceLayout(1, L))[:, None]
            new = ()
            for g in gl.static_range(GATES):
                if c < REG_CHUNKS:
                    w = w_reg[g * REG_CHUNKS + c]
                else:
                    w = w_smem[g * (CHUNKS - REG_CHUNKS) + c - REG_CHUNKS].load(L).to(gl.float32)
                new = new + (acc[g] + gl.sum(w * h_k, axis=0), )
            acc = new
        return acc

    @gluon.jit
    def _sigmoid(x, FAST: gl.constexpr):
        """The logistic sigmoid: on the MUFU when ``FAST`` (``0.5 tanh(x/2) + 0.5``), else ``1 / (1 + exp(-x))``."""
        if FAST:
            y = 0.5 * _tanh(0.5 * x, True) + 0.5
        else:
            y = 1.0 / (1.0 + gl.exp(-x))
        return y

    @gluon.jit
    def _tanh(x, FAST: gl.constexpr):
        """tanh: on the MUFU when ``FAST`` (``tanh.approx.f32``), else ``common._tanh``'s exact form
        (``sign(x) (1 - e) / (1 + e)``, ``e = exp(-2|x|)``, odd Taylor terms below 1e-2)."""
        if FAST:
            y = gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True,
                                          pack=1)
        else:
            ax = gl.abs(x)
            e = gl.exp(-2.0 * ax)
            y = gl.where(ax < 1e-2, ax * (1.0 - ax * ax / 3.0), (1.0 - e) / (1.0 + e))
            y = gl.where(x < 0, -y, y)
        return y
