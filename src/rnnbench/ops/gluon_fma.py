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

Layouts (``K_SPLIT`` parts of k (:func:`k_split`: two with 16-bit weights at hidden 65-128 for
the GRU, 101-128 for the LSTM, else one), each part ``32 / K_SPLIT`` lanes of every one of the
``num_warps`` warps, ``K_PAD = 32 * num_warps / K_SPLIT`` units):

- the weights: ``W_hh[g * H + j, k]`` at row k, column j of gate g's tile ``[K_ROWS, K_PAD]``, zeros
  past H in either index (``K_ROWS``: H rounded up to a chunk), in chunks of :data:`CHUNK` rows of k,
  each chunk ``[K_SPLIT, CHUNK, K_PAD]`` (part s's k from ``s * K_PAD / K_SPLIT``): the first
  :func:`reg_chunks` of every gate in the threads' registers, the rest in shared memory (unswizzled,
  one buffer a chunk; fp32 down each column, 16 bits with each unit's chunk of k contiguous). With
  ``HALF_W`` (TF32, ``Plan.half_weights``) fp32 weights are held as 16-bit ones, divided first by a
  power of two per unit, gate and part, and each gate's sum is multiplied back.
- :func:`product_layout`: such a chunk of one gate with a unit a thread of each part (the parts'
  threads of a unit lanes of one warp) and the chunk's k in that thread's registers, so each dot
  product is the thread's own chain of fused multiply-adds (IEEE fp32); with two parts, each gate's
  two sums meet by a shuffle within the warp, and both parts' lanes finish every unit
  (:func:`units_layout`).
- ``h_smem [2, K_PAD]`` fp32: h_{t-1} for every thread to read whole (broadcast reads; part s its
  part of k), two buffers so that a step writes h_t into one while the other is still being read:
  one CTA barrier a step by design. (The compiler puts a second before h_t's store: it cannot tell
  the two buffers of one allocation apart.)

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


# Parts k is split into with 16-bit weights, from these widths (the GRU's, the LSTM's): each part's
# threads form their units' dot products over their part of k, and the parts' sums meet once a step
# (a shuffle between the parts' lanes of a warp), so each scheduler issues from two warps and W_hh
# has twice the registers. Each part takes ``K_PAD / 2`` of k, so at hidden 100 (``K_PAD`` 128) they
# pad 104 rows of k to 128. On the H100 (graphed forwards with the parts as warps, their sums met in
# shared memory: results/h100/gated-fma/k-split-86b4f9c and k-split-4d75779): at hidden 128, batch
# 32 and 128, bf16 and fp16 took 0.71-0.90x the time (GRU bf16 40.3 -> 30.7 µs, LSTM 52.0 -> 46.2);
# at hidden 100, batch 20, bf16's GRU 0.89x, its LSTM 1.05x; fp32 weights (TF32) 0.93-1.03x at
# hidden 128, 1.02-1.12x at 100 and 0.95-1.18x at 32-64: one part. (Not measured in 16 bits below
# hidden 65, nor the LSTM between 101 and 127.) As lanes, TF32's LSTM at hidden 128 took 0.93-0.95x
# the time of the warps' form, bf16's 1.02-1.04x (results/h100/ahead/lanes-graphed.txt).
K_SPLIT_MIN_HIDDEN = {3: 65, 4: 101}

# TF32 forwards (fp32 weights where TF32 is allowed: ``Plan.half_weights``, ``HALF_W``) hold ``W_hh^T``
# on the chip as fp16, as the 16-bit forwards do, after dividing each unit's row of every gate (a
# part's share of k) by the power of two that brings its largest |w| into [2^14, 2^15) (as the
# exchange plans' half operands: ``common.HALF_SHIFT``): below fp16's 65504, and 28 binades above
# its subnormals, where TF32's 8-bit exponent would have kept its 11 significant bits too; each
# gate's sum is multiplied back (exact). Chunks held in registers stay fp32 (divided, not rounded).


def k_split(num_gates: int, hidden_size: int, element: int) -> int:
    """Parts of k across warps for ``num_gates`` gates at ``hidden_size`` with weights of
    ``element`` bytes (:data:`K_SPLIT_MIN_HIDDEN`): 2 or 1."""
    return 2 if element == 2 and hidden_size >= K_SPLIT_MIN_HIDDEN[num_gates] else 1


def part_chunks(rows: int, k_padded: int, parts: int) -> int:
    """Chunks of k in each part: all ``rows`` of k (:func:`k_rows`) in one part; with more,
    ``k_padded / parts`` of k each (part s from ``s * k_padded / parts``: h read in place, the last
    part's past H zeros). The kernels' ``CHUNKS`` too (``_part_chunks``)."""
    return rows // CHUNK if parts == 1 else k_padded // parts // CHUNK


def reg_chunks(num_gates: int, hidden_size: int, k_padded: int, parts: int) -> int:
    """Chunks of k of every gate in a thread's registers: as many as :data:`REG_VALUES` holds, at
    most its part's all."""
    return min(REG_VALUES // (num_gates * CHUNK), part_chunks(k_rows(hidden_size), k_padded, parts))


def k_rows(hidden_size: int) -> int:
    """Rows of k in the shared tile: ``hidden_size`` rounded up to a chunk."""
    return -(-hidden_size // CHUNK) * CHUNK


def constexprs(num_gates: int, hidden_size: int, num_warps: int, unit_warps: int, fast_activations: bool,
               half_weights: bool = False) -> dict:
    """The FMA forward kernels' compile-time sizes for a plan of ``num_warps`` warps, ``unit_warps``
    of them a part of k (a thread per unit in each part: ``K_PAD = 32 * unit_warps``, ``K_SPLIT =
    num_warps / unit_warps``), as the launch and ``ops/aot.py`` give them; ``HALF_W``: fp32 weights
    held as scaled fp16 (``Plan.half_weights``)."""
    k_padded, parts = 32 * unit_warps, num_warps // unit_warps
    return dict(H=hidden_size, K_ROWS=k_rows(hidden_size), K_PAD=k_padded, K_SPLIT=parts,
                REG_CHUNKS=reg_chunks(num_gates, hidden_size, k_padded, parts), FAST_ACT=fast_activations,
                HALF_W=half_weights, num_warps=num_warps)


def shared_bytes(num_gates: int, hidden_size: int, k_padded: int, element: int) -> int:
    """Shared memory of one program (``k_padded``: its units, 32 a warp of a part): the gates'
    chunks not in registers, in the weights' dtype (``element`` bytes), and two fp32 buffers of h."""
    parts = k_split(num_gates, hidden_size, element)
    chunks = part_chunks(k_rows(hidden_size), k_padded, parts) - reg_chunks(num_gates, hidden_size, k_padded, parts)
    return num_gates * chunks * parts * CHUNK * k_padded * element + 2 * k_padded * 4


if AVAILABLE:
    from . import common
    from .gluon_common import _load_f32, gl, gluon

    _CHUNK = gl.constexpr(CHUNK)
    _part_chunks = gluon.constexpr_function(part_chunks)

    @gluon.constexpr_function
    def product_layout(num_warps, parts):
        """A ``[parts, _CHUNK, K_PAD]`` chunk of a gate's ``W_hh^T`` (each part's chunk of k): unit
        j of part s in lane ``j % (32 / parts) + s * 32 / parts`` of warp ``j / (32 / parts)``, the
        chunk's k in its registers. (The parts are lanes of one warp, so their sums meet by a
        shuffle, with no shared memory and no CTA barrier between.)"""
        return gl.BlockedLayout([1, _CHUNK, 1], [parts, 1, 32 // parts], [1, 1, num_warps], [2, 1, 0])

    @gluon.constexpr_function
    def units_layout(num_warps, parts):
        """The cell's ``[K_PAD]`` vectors: unit j in the lanes of every part that form it (each
        part's lanes hold them all)."""
        return gl.SliceLayout(0, gl.SliceLayout(1, product_layout(num_warps, parts)))

    @gluon.jit
    def row_start(h0_ptr, lengths_ptr, b, T, B, H: gl.constexpr, HAS_H0: gl.constexpr, HAS_LENGTHS: gl.constexpr,
                  K_PAD: gl.constexpr, K_SPLIT: gl.constexpr, num_warps: gl.constexpr):
        """What a program of either cell sets up before its first step besides its weights
        (:func:`weights_on_chip`), for batch row ``b``: ``(h_smem, units, mask, length,
        row, plane, h)``, the two buffers of h (``[2, K_PAD]`` fp32), the units (``[K_PAD]``, one a
        thread of each part) and their mask, the row's length (``T`` without lengths), its offset in a
        ``[B, H]`` plane and a plane's size (int64), and h0 as fp32 (zeros without it), the carried h."""
        U: gl.constexpr = units_layout(num_warps, K_SPLIT)
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
        return h_smem, units, mask, length, row, plane, h

    @gluon.jit
    def publish_h(h_smem, h_buf_ptr, h, t, running, plane, row, units, mask):
        """h_t to every thread (into the buffer not read at step t) and into ``h_buf[t+1]`` (zeros
        past the row's length, as the ``tl`` kernels store it), in ``h_buf``'s dtype."""
        h_smem.index((t + 1) % 2).store(h)
        gl.store(h_buf_ptr + (t + 1) * plane + row + units, gl.where(running, h, 0.0).to(h_buf_ptr.dtype.element_ty),
                 mask=mask)

    @gluon.jit
    def gate_inputs(x_proj_ptr, t, plane, row, units, mask, H: gl.constexpr, GATES: gl.constexpr,
                    PRODUCED: gl.constexpr):
        """Step ``t``'s input projection, one ``[K_PAD]`` vector a gate (a tuple), as stored (widened
        where used): from the ``[T, B, GATES*H]`` buffer, ``plane = B * GATES * H``, ``row = b * GATES * H``.
        ``PRODUCED``: written by other programs of this launch (``ops/gluon_produce.py``), so read
        through L2 (``.cg``), never from a line this multiprocessor's L1 might hold."""
        x_t = x_proj_ptr + t * plane + row + units
        x = ()
        for g in gl.static_range(GATES):
            if PRODUCED:
                x = x + (gl.load(x_t + g * H, mask=mask, other=0.0, cache_modifier=".cg"), )
            else:
                x = x + (gl.load(x_t + g * H, mask=mask, other=0.0), )
        return x

    @gluon.jit
    def weights_on_chip(w_hh_ptr, H: gl.constexpr, GATES: gl.constexpr, K_ROWS: gl.constexpr, K_PAD: gl.constexpr,
                        K_SPLIT: gl.constexpr, REG_CHUNKS: gl.constexpr, HALF_W: gl.constexpr, num_warps: gl.constexpr):
        """``W_hh [GATES*H, H]`` (row-major) transposed onto the chip, a chunk ``[K_SPLIT, CHUNK,
        K_PAD]`` of one gate at a time (each part's c-th chunk of k, part s's k from ``s * K_PAD /
        K_SPLIT``): thread j of part s reads the
        chunk's values of row j (contiguous). Returns ``(w_reg, w_smem, scales)``: the first
        ``REG_CHUNKS`` chunks of every gate in registers (fp32; gate g's chunk c at ``g *
        REG_CHUNKS + c``), the rest in shared memory, one buffer each (shared memory's shapes must
        be powers of 2, and the compiler's barrier analysis then puts no CTA barrier between their
        stores; gate g's chunk c at ``g * (CHUNKS - REG_CHUNKS) + c - REG_CHUNKS``, ``CHUNKS`` a
        part's): fp32 written down column j, so a warp's stores touch consecutive words; 16 bits
        with each unit's chunk of k contiguous, 16 bytes a thread. ``scales``: with ``HALF_W`` (fp32
        weights held as fp16, ``common._pow2_above``) one ``[K_SPLIT, K_PAD]`` fp32 tensor a gate (a
        tuple), the power of two each unit's row of that gate (its part of k) was divided by (read
        twice: its largest |w| first); else empty."""
        L: gl.constexpr = product_layout(num_warps, K_SPLIT)
        if HALF_W:
            ELEMENT: gl.constexpr = gl.float16
        else:
            ELEMENT: gl.constexpr = w_hh_ptr.dtype.element_ty
        if ELEMENT == gl.float32:  # (down column j: the compiler reads it with LDSM)
            SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0])
        else:
            # A unit's chunk of k contiguous: 16 bytes a thread, one LDS.128 where down column j
            # took a load a value (the LSTM's bf16 loop at hidden 128 on sm_90: 32 loads a warp, not
            # 144; graphed forwards on the H100 0.81-0.90x the time, the GRU's 0.95-1.04x:
            # results/h100/gated-fma/contiguous-e347eba).
            SMEM: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 2, 0])
        CHUNKS: gl.constexpr = _part_chunks(K_ROWS, K_PAD, K_SPLIT)
        j = gl.arange(0, K_PAD, layout=gl.SliceLayout(0, gl.SliceLayout(1, L)))[None, None, :]
        kc = gl.arange(0, _CHUNK, layout=gl.SliceLayout(0, gl.SliceLayout(2, L)))[None, :, None]
        part = gl.arange(0, K_SPLIT, layout=gl.SliceLayout(1, gl.SliceLayout(2, L)))[:, None, None]
        w_reg = ()
        w_smem = ()
        scales = ()
        for g in gl.static_range(GATES):
            if HALF_W:
                m = gl.zeros([K_SPLIT, K_PAD], gl.float32, gl.SliceLayout(1, L))
                for c in gl.static_range(CHUNKS):  # (the row's largest |w| before any value is rounded)
                    m = gl.maximum(m, gl.max(gl.abs(_chunk(w_hh_ptr, g, c, j, kc, part, H, K_PAD, K_SPLIT)), axis=1))
                scale, inv = common._pow2_above(m, common.HALF_SHIFT)
                scales = scales + (scale, )
            for c in gl.static_range(CHUNKS):
                w = _chunk(w_hh_ptr, g, c, j, kc, part, H, K_PAD, K_SPLIT)
                if HALF_W:
                    w = w * inv[:, None, :]
                if c < REG_CHUNKS:
                    w_reg = w_reg + (w.to(gl.float32), )
                else:
                    buf = gl.allocate_shared_memory(ELEMENT, [K_SPLIT, _CHUNK, K_PAD], SMEM)
                    buf.store(w.to(ELEMENT))
                    w_smem = w_smem + (buf, )
        return w_reg, w_smem, scales

    @gluon.jit
    def _chunk(w_hh_ptr, g, c: gl.constexpr, j, kc, part, H: gl.constexpr, K_PAD: gl.constexpr,
               K_SPLIT: gl.constexpr):
        """Gate ``g``'s c-th chunk of k of every part from ``W_hh [GATES*H, H]`` (zeros past H), as
        :func:`weights_on_chip` lays it out (``j``, ``kc``, ``part``: its units, k within a chunk,
        parts)."""
        k = part * (K_PAD // K_SPLIT) + c * _CHUNK + kc
        return gl.load(w_hh_ptr + (g * H + j) * H + k, mask=(j < H) & (k < H), other=0.0)

    @gluon.jit
    def gate_products(w_reg, w_smem, scales, h_prev, GATES: gl.constexpr, K_ROWS: gl.constexpr,
                      K_PAD: gl.constexpr, K_SPLIT: gl.constexpr, REG_CHUNKS: gl.constexpr, HALF_W: gl.constexpr,
                      num_warps: gl.constexpr):
        """The step's recurrent products ``W_hh h_{t-1}``, one fp32 ``[K_PAD]`` vector a gate (a
        tuple, in :func:`units_layout`), from :func:`weights_on_chip`'s chunks and ``h_prev``
        (``[K_PAD]`` fp32 in shared memory, part s's k read whole by every thread of part s, as rows
        ``[K_SPLIT, K_PAD / K_SPLIT]``): each chunk of k is the thread's own chain per gate, the
        chunks' sums added in order, then the parts' sums (a shuffle within the warp; two parts'
        sum is the same either way round); with ``HALF_W`` each part's sums multiplied back by their
        ``scales`` first."""
        L: gl.constexpr = product_layout(num_warps, K_SPLIT)
        S: gl.constexpr = gl.SliceLayout(1, L)
        CHUNKS: gl.constexpr = _part_chunks(K_ROWS, K_PAD, K_SPLIT)
        rows = h_prev.reshape([K_SPLIT, K_PAD // K_SPLIT])
        acc = ()
        for g in gl.static_range(GATES):
            acc = acc + (gl.zeros([K_SPLIT, K_PAD], gl.float32, S), )
        for c in gl.static_range(CHUNKS):
            h_k = rows.slice(c * _CHUNK, _CHUNK, dim=1).load(gl.SliceLayout(2, L))[:, :, None]
            new = ()
            for g in gl.static_range(GATES):
                if c < REG_CHUNKS:
                    w = w_reg[g * REG_CHUNKS + c]
                else:
                    w = w_smem[g * (CHUNKS - REG_CHUNKS) + c - REG_CHUNKS].load(L).to(gl.float32)
                new = new + (acc[g] + gl.sum(w * h_k, axis=1), )
            acc = new
        if HALF_W:
            new = ()
            for g in gl.static_range(GATES):
                new = new + (acc[g] * scales[g], )
            acc = new
        out = ()
        for g in gl.static_range(GATES):  # (the parts' sums: a shuffle between a unit's lanes)
            out = out + (gl.sum(acc[g], axis=0), )
        return out

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
