"""The Elman RNN's recurrence on the FMA units, one batch row a program (``Plan.fma``): forward and backward.

At hidden sizes up to 128 the whole of ``W_hh`` is 64 KB of fp32: one program holds it in its
registers (128 a thread at 4 warps) and runs every step of one batch row, so no program ever waits
for another (no barrier, no exchange through memory) and no step waits for a tensor-core chain.
Thread ``j`` owns unit ``j``'s row of ``W_hh`` whole, so its dot product with ``h_{t-1}`` is its
own arithmetic, in :data:`CHAINS` independent chains of fused multiply-adds (one chain would make
each step wait for 128 dependent FMAs), and ``h_{t-1}`` reaches every thread through shared memory
(one store, a barrier, broadcast reads). IEEE fp32 fused multiply-adds, in every dtype: strict fp32
as torch means it, not 3xTF32.

``h_t = act(x_proj_t + b_ih + b_hh + W_hh h_{t-1})``, the recurrence of ``ops/rnn/kernels.py``
(whose kernels are the tensor-core form and whose ``naive.py`` is the readable reference), with
their buffers: ``x_proj [T, B, H]``, ``h_buf [T+1, B, H]`` (step t writes ``h_buf[t+1]``,
``h_buf[0]`` h0 when saving), ``h_n [1, B, H]``, ``saved [T, B, H]`` fp32 h_t for the backward.
The backward is the same program in reverse time with ``W_hh^T``: thread ``k`` holds column ``k``
of ``W_hh`` (read through swapped strides, no transposed copy) and forms ``dh_{t-1}[k] = sum_j
W_hh[j, k] d_pre_t[j]``.

Eagerly the forward may compute ``x_proj`` in its own launch (``Plan.produce``,
``recurrence.produces``): producer programs ahead of the rows run the projection kernel's tiles and
count them, and the rows wait for the count (:func:`rnn_forward_fma_kernel`): one launch a call
instead of two, the host's time for the other saved.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..common import _wait, _wait_prior
from ..projection import _project_tiles
from .kernels import _activation

# Independent accumulators per dot product: each thread's row of W_hh is held as [CHAINS, K_PAD /
# CHAINS] and summed along the second axis first. sm_90, Triton 3.6, hidden 100: 1, 4 and 8 chains
# all compile to 168 registers without spills, 128, 125 and 121 FFMA in the kernel
# (results/h100/fma-rnn/aot/compile_fma-triton3.6.txt); chains other than 4 were not timed.
CHAINS = 4


@triton.jit
def _row_setup(lengths_ptr, b, T, B, H: tl.constexpr, HAS_LENGTHS: tl.constexpr):
    """Batch row ``b``'s ``(length, row, plane)``: its sequence's length (``T`` without lengths), the
    offset of its ``[H]`` slice in a ``[B, H]`` plane and a plane's size (int64: T * B * H may pass 2^31)."""
    if HAS_LENGTHS:
        length = tl.load(lengths_ptr + b)
    else:
        length = T
    return length, b.to(tl.int64) * H, B.to(tl.int64) * H


@triton.jit(do_not_specialize=["T", "B", "w_stride_j", "w_stride_k", "I", "PRODUCERS"])
def rnn_forward_fma_kernel(
    x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, x_ptr, w_ih_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
    counters_ptr, T, B, w_stride_j, w_stride_k, I, PRODUCERS,
    H: tl.constexpr, RELU: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, K_PAD: tl.constexpr, CHAINS: tl.constexpr, FAST_ACT: tl.constexpr,
    PDL: tl.constexpr, PRODUCE: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr, BM: tl.constexpr,
    BN: tl.constexpr, BK: tl.constexpr, EVEN: tl.constexpr,
):
    """Program ``program_id(1)`` runs batch row ``b`` through all ``T`` steps. ``w_stride_j``,
    ``w_stride_k``: ``W_hh``'s strides (``H``, 1), passed at run time and never specialised on
    purpose: with its strides known Triton lays the tile out for coalesced loads, threads along K,
    and every step's dot products become cross-thread reductions (96 shuffles in the kernel at
    hidden 100, sm_90); with them unknown it gives each thread a whole row (no shuffles), which is the
    layout wanted here, at the price of one uncoalesced load of the weights before the loop.
    ``HAS_LENGTHS``: ``lengths [B]`` int32, as ``rnn_forward_kernel``. ``PDL``: launched by
    programmatic dependent launch (``launch.dependent_launch``), waits for the projection.

    ``PRODUCE`` (:attr:`~rnnbench.ops.plans.Plan.produce`): the projection is this launch's own.
    The first ``PRODUCERS`` programs compute ``x_proj = x W_ih^T`` (``x [T, B, I]`` and ``W_ih
    [H, I]`` contiguous) as the projection kernel's tiles (``projection._project_tiles``: ``PRECISION``,
    ``UPCAST``, ``BM``, ``BN``, ``BK``, ``EVEN`` as its), counting each tile done on
    ``counters_ptr[0]``; program ``PRODUCERS + b`` runs batch row ``b``, reading ``x_proj`` once
    every tile is counted, and the last row out sets both counters (``[1]``: rows out) back to
    zero. Producers come first because the interpreter runs programs in order; on the GPU every
    program is resident at once (the launch's ``PRODUCERS + B`` at most the multiprocessors), so
    none waits for a program not yet started. Otherwise ``x_ptr``, ``w_ih_ptr``, ``counters_ptr``,
    ``I`` and ``PRODUCERS`` are not read (``PRODUCERS`` 0)."""
    pid = tl.program_id(1)
    if PRODUCE:  # (a constexpr first: without it no producer's code is compiled, nor its registers taken)
        if pid < PRODUCERS:
            _project_tiles(x_ptr, w_ih_ptr, x_proj_ptr, counters_ptr, T * B, I, H, pid, PRODUCERS, PRECISION, UPCAST,
                           BM, BN, BK, EVEN)
        else:
            _rnn_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
                     counters_ptr, T, B, w_stride_j, w_stride_k, pid - PRODUCERS, H, RELU, HAS_BIAS, HAS_H0, SAVE,
                     HAS_LENGTHS, K_PAD, CHAINS, FAST_ACT, PDL, True, tl.cdiv(T * B, BM) * tl.cdiv(H, BN))
    else:
        _rnn_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
                 counters_ptr, T, B, w_stride_j, w_stride_k, pid, H, RELU, HAS_BIAS, HAS_H0, SAVE, HAS_LENGTHS, K_PAD,
                 CHAINS, FAST_ACT, PDL, False, 0)


@triton.jit
def _rnn_row(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h0_ptr, lengths_ptr, h_buf_ptr, h_n_ptr, saved_ptr,
             counters_ptr, T, B, w_stride_j, w_stride_k, b, H: tl.constexpr, RELU: tl.constexpr,
             HAS_BIAS: tl.constexpr, HAS_H0: tl.constexpr, SAVE: tl.constexpr, HAS_LENGTHS: tl.constexpr,
             K_PAD: tl.constexpr, CHAINS: tl.constexpr, FAST_ACT: tl.constexpr, PDL: tl.constexpr,
             PRODUCE: tl.constexpr, tiles):
    """:func:`rnn_forward_fma_kernel`'s batch row ``b`` through all ``T`` steps (with ``PRODUCE``,
    after the ``tiles`` of ``x_proj`` are counted at ``counters_ptr``)."""
    KI: tl.constexpr = K_PAD // CHAINS
    units = tl.arange(0, K_PAD)  # j: this step's units, one per thread
    unit_mask = units < H
    # k, as [CHAINS, KI]: the reduction index of the weights and of h_{t-1} as every thread reads it
    k = tl.arange(0, CHAINS)[:, None] * KI + tl.arange(0, KI)[None, :]
    w = tl.load(w_hh_ptr + units[:, None, None] * w_stride_j + k[None, :, :] * w_stride_k,
                mask=unit_mask[:, None, None] & (k < H)[None, :, :], other=0.0).to(tl.float32)
    bias = tl.zeros([K_PAD], dtype=tl.float32)
    if HAS_BIAS:
        bias += tl.load(b_ih_ptr + units, mask=unit_mask, other=0.0).to(tl.float32)
        bias += tl.load(b_hh_ptr + units, mask=unit_mask, other=0.0).to(tl.float32)
    length, row, plane = _row_setup(lengths_ptr, b, T, B, H, HAS_LENGTHS)
    if HAS_H0:
        h_k = tl.load(h0_ptr + row + k, mask=k < H, other=0.0).to(tl.float32)
        h = tl.load(h0_ptr + row + units, mask=unit_mask, other=0.0).to(tl.float32)
    else:
        h_k = tl.zeros([CHAINS, KI], dtype=tl.float32)
        h = tl.zeros([K_PAD], dtype=tl.float32)
    out_ty = h_buf_ptr.dtype.element_ty
    _wait_prior(PDL)  # (the weights, biases and h0 read above; x_proj, the projection's, from here)
    if PRODUCE:
        _wait(counters_ptr, tiles)
    if SAVE:
        tl.store(h_buf_ptr + row + units, h.to(out_ty), mask=unit_mask)
    x = _load_input(x_proj_ptr + row + units, unit_mask, PRODUCE).to(tl.float32)
    x_next = _load_input(x_proj_ptr + tl.minimum(1, T - 1) * plane + row + units, unit_mask, PRODUCE)
    t = 0
    while t < T:
        # The input two steps ahead (past the end: the last step's again). One step ahead, the
        # loop's end waited for it (the carried register's copy), a trip to L2 in every step.
        x_after = _load_input(x_proj_ptr + tl.minimum(t + 2, T - 1) * plane + row + units, unit_mask, PRODUCE)
        a = tl.sum(tl.sum(w * h_k[None, :, :], axis=2), axis=1)
        h_new = _activation(a + x + bias, RELU, FAST_ACT)
        running = t < length
        h = tl.where(running, h_new, h)  # past its length a row keeps its state
        tl.store(h_buf_ptr + (t + 1) * plane + row + units, tl.where(running, h, 0.0).to(out_ty), mask=unit_mask)
        if SAVE:
            tl.store(saved_ptr + t * plane + row + units, h, mask=unit_mask)
        h_k = tl.reshape(h, [CHAINS, KI])  # to every thread (through shared memory)
        x, x_next = x_next.to(tl.float32), x_after
        t += 1
    tl.store(h_n_ptr + row + units, h.to(h_n_ptr.dtype.element_ty), mask=unit_mask)
    if PRODUCE:
        _rows_out(counters_ptr, B)


@triton.jit
def _load_input(ptrs, mask, PRODUCE: tl.constexpr):
    """A step's input terms; with ``PRODUCE`` written by other programs of this launch, so read
    through L2 (``.cg``), never from a line this multiprocessor's L1 might hold."""
    if PRODUCE:
        return tl.load(ptrs, mask=mask, other=0.0, cache_modifier=".cg")
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def _rows_out(counters_ptr, rows):
    """Count this batch row out (``counters_ptr[1]``); the last of ``rows`` sets the tiles' count
    (``[0]``) and its own back to zero for the next launch (every row has read every tile by then)."""
    if tl.atomic_add(counters_ptr + 1, 1, sem="acq_rel", scope="gpu") == rows - 1:
        tl.atomic_xchg(counters_ptr, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(counters_ptr + 1, 0, sem="relaxed", scope="gpu")


@triton.jit
def _saved_step(t, saved_ptr, d_out_ptr, plane, row, units, unit_mask, HAS_D_OUT: tl.constexpr):
    """Backward step ``t``'s saved fp32 ``h_t`` and output gradient (fp32; zeros without one)."""
    h = tl.load(saved_ptr + t * plane + row + units, mask=unit_mask, other=0.0)
    if HAS_D_OUT:
        d_out = tl.load(d_out_ptr + t * plane + row + units, mask=unit_mask, other=0.0).to(tl.float32)
    else:
        d_out = tl.zeros(h.shape, dtype=tl.float32)
    return h, d_out


@triton.jit(do_not_specialize=["T", "B", "w_stride_k", "w_stride_j"])
def rnn_backward_fma_kernel(
    d_out_ptr, d_h_n_ptr, saved_ptr, w_hh_ptr, d_pre_ptr, d_h0_ptr, lengths_ptr,
    T, B, w_stride_k, w_stride_j,
    H: tl.constexpr, RELU: tl.constexpr, HAS_D_OUT: tl.constexpr, HAS_D_H_N: tl.constexpr,
    HAS_LENGTHS: tl.constexpr, K_PAD: tl.constexpr, CHAINS: tl.constexpr,
):
    """Reverse-time recurrence of batch row ``program_id(1)``, as ``rnn_backward_kernel``: writes
    ``d_pre [T, B, H]`` (the pre-activations' gradient, in the weights' dtype) and ``d_h0``.
    ``w_stride_k``, ``w_stride_j``: ``W_hh``'s strides swapped (1, ``H``), so that the tile is
    ``W_hh^T`` (thread ``k`` a column), unspecialised for the layout as in the forward."""
    JI: tl.constexpr = K_PAD // CHAINS
    b = tl.program_id(1)
    units = tl.arange(0, K_PAD)  # k: the units whose dh_{t-1} this thread forms
    unit_mask = units < H
    j = tl.arange(0, CHAINS)[:, None] * JI + tl.arange(0, JI)[None, :]  # the reduction index, as every thread reads it
    w = tl.load(w_hh_ptr + units[:, None, None] * w_stride_k + j[None, :, :] * w_stride_j,
                mask=unit_mask[:, None, None] & (j < H)[None, :, :], other=0.0).to(tl.float32)
    length, row, plane = _row_setup(lengths_ptr, b, T, B, H, HAS_LENGTHS)
    d_h_rec = tl.zeros([K_PAD], dtype=tl.float32)
    if HAS_D_H_N:
        d_h_rec = tl.load(d_h_n_ptr + row + units, mask=unit_mask, other=0.0).to(tl.float32)
    t = T - 1
    h, d_out = _saved_step(t, saved_ptr, d_out_ptr, plane, row, units, unit_mask, HAS_D_OUT)
    h_next, d_out_next = _saved_step(tl.maximum(t - 1, 0), saved_ptr, d_out_ptr, plane, row, units, unit_mask,
                                     HAS_D_OUT)
    while t >= 0:
        # two steps back first (before the first step: step 0's again), as the forward's input
        h_after, d_out_after = _saved_step(tl.maximum(t - 2, 0), saved_ptr, d_out_ptr, plane, row, units, unit_mask,
                                           HAS_D_OUT)
        running = t < length
        d_h = d_h_rec + tl.where(running, d_out, 0.0)  # past its end the output was a constant zero
        if RELU:
            d_pre = tl.where(running & (h > 0.0), d_h, 0.0)
        else:
            d_pre = tl.where(running, d_h * (1.0 - h * h), 0.0)
        d_pre = d_pre.to(d_pre_ptr.dtype.element_ty)
        tl.store(d_pre_ptr + t * plane + row + units, d_pre, mask=unit_mask)
        d_pre_j = tl.reshape(d_pre.to(tl.float32), [CHAINS, JI])  # to every thread (through shared memory)
        d_h_new = tl.sum(tl.sum(w * d_pre_j[None, :, :], axis=2), axis=1)
        d_h_rec = tl.where(running, d_h_new, d_h)  # a finished row's gradient passes through
        h, d_out, h_next, d_out_next = h_next, d_out_next, h_after, d_out_after
        t -= 1
    tl.store(d_h0_ptr + row + units, d_h_rec.to(d_h0_ptr.dtype.element_ty), mask=unit_mask)
