"""One recurrent layer in one direction on the Triton kernels, as a torch.autograd.Function.

Forward: the input projection of every step as one matmul (``x_proj = x W_ih^T``, ``[T*B, I] x
[I, G*H]``; ``ops/projection.py``: our own launch for small layers, cuBLAS for the rest; the
biases are added inside the kernel), then **one kernel launch for all T steps**
(``ops/<cell>/kernels.py``; the 16-bit LSTM's and GRU's forwards past one piece of h in Gluon,
``ops/<cell>/gluon.py``, where ``Plan.gluon``; up to hidden 128 a program per batch row on FMA
units, ``ops/<cell>/fma.py``, where ``Plan.fma``: the RNN's both ways, the LSTM's and GRU's
forward). Backward: one launch running the recurrence in
reverse time, producing the gradients of the pre-activations of every step (``d_gates [T, B,
G*H]``), ``dh0`` and ``dc0``; then the weight and input gradients as large matmuls over them::

    dW_hh = d_gates_h^T h_{t-1}     dW_ih = d_gates_x^T x     db = sums over (T, B)
    dx = d_gates_x W_ih

Every state is fp32 inside the kernels (cell state, the program's slice of h, accumulation) for
every dtype; the tensors the user sees are in the weights' dtype.

Per call the host does little: the launch plan is cached per shape, the barrier counters are one
buffer per device and stream that the kernels leave zeroed, ``h0``/``c0`` are read in place
(absent ones are zeros inside the kernel) and the final states are written by the kernel. A
forward under ``no_grad`` is one matmul and one kernel launch (the Gluon forwards, which leave
their counters counted, take theirs from a zeroed pool: ``launch.counted_counters``), with no host
synchronisation (so it can be captured in a CUDA graph).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from dataclasses import dataclass
from typing import NamedTuple

import torch

from . import gluon_common, gluon_fma, gluon_produce
from .common import INTERPRET
from .loop import kernel_lengths
from .gradients import layer_gradients
from .gru import fma as gru_fma
from .gru import gluon as gru_gluon
from .gru.kernels import gru_backward_kernel, gru_backward_split_k_kernel, gru_forward_kernel
from .launch import Constexprs, KernelLauncher
from .launch import counted_counters as _counted_counters
from .launch import counters as _counters  # (bound here: a test replaces the recurrences' counters alone)
from .launch import capturing, dependent_launch, launch_stream
from .lstm import fma as lstm_fma
from .lstm import gluon as lstm_gluon
from .lstm.kernels import lstm_backward_kernel, lstm_backward_split_k_kernel, lstm_forward_kernel
from .lstm.pieces import lstm_backward_pieces_kernel, lstm_forward_pieces_kernel
from .gru.pieces import gru_backward_pieces_kernel, gru_forward_pieces_kernel
from .plans import (AHEAD_MIN_STEPS, STRICT_FP32_DEFAULT, SUPPORTED_DTYPES, Plan, backward_precision, chip_split_level,
                    choose_plan, fma_warps, gate_split_constexprs, k_chunks, k_padded, layer_precision, multiprocessors,
                    producers, reg_weights_kernel, row_stride, split_k_pieces, split_once_level, upcast_dot)
from .products import Tiles
from .projection import (EVEN_MAX_FLOP, UNPRODUCED, input_projection, make_cublas, produced_constexprs, produced_tiles,
                         project_ahead)
from .rnn.fma import CHAINS as FMA_CHAINS
from .rnn.fma import rnn_backward_fma_kernel, rnn_forward_fma_kernel
from .rnn.kernels import rnn_backward_kernel, rnn_forward_kernel

_LSTM_FORWARD, _LSTM_BACKWARD = KernelLauncher(lstm_forward_kernel), KernelLauncher(lstm_backward_kernel)
_LSTM_BACKWARD_SPLIT_K = KernelLauncher(lstm_backward_split_k_kernel)
_LSTM_FORWARD_PIECES = KernelLauncher(lstm_forward_pieces_kernel)
_LSTM_BACKWARD_PIECES = KernelLauncher(lstm_backward_pieces_kernel)
_GRU_FORWARD_PIECES = KernelLauncher(gru_forward_pieces_kernel)
_GRU_BACKWARD_PIECES = KernelLauncher(gru_backward_pieces_kernel)
_GRU_FORWARD, _GRU_BACKWARD = KernelLauncher(gru_forward_kernel), KernelLauncher(gru_backward_kernel)
_GRU_BACKWARD_SPLIT_K = KernelLauncher(gru_backward_split_k_kernel)
_RNN_FORWARD, _RNN_BACKWARD = KernelLauncher(rnn_forward_kernel), KernelLauncher(rnn_backward_kernel)
_RNN_FORWARD_FMA, _RNN_BACKWARD_FMA = KernelLauncher(rnn_forward_fma_kernel), KernelLauncher(rnn_backward_fma_kernel)
_LSTM_FORWARD_GLUON = KernelLauncher(lstm_gluon.lstm_forward_gluon_kernel) if gluon_common.AVAILABLE else None
_GRU_FORWARD_GLUON = KernelLauncher(gru_gluon.gru_forward_gluon_kernel) if gluon_common.AVAILABLE else None
_GRU_FORWARD_FMA = KernelLauncher(gru_fma.gru_forward_fma_kernel) if gluon_common.AVAILABLE else None
_LSTM_FORWARD_FMA = KernelLauncher(lstm_fma.lstm_forward_fma_kernel) if gluon_common.AVAILABLE else None

NUM_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
_PLAN_OVERRIDE: contextvars.ContextVar[tuple] = contextvars.ContextVar("rnnbench_plan_override", default=())
STRICT_FP32_MODES = ("tf32x3", "ieee")
_STRICT_FP32: contextvars.ContextVar[str] = contextvars.ContextVar("rnnbench_strict_fp32", default=STRICT_FP32_DEFAULT)


@contextlib.contextmanager
def plan_override(**fields):
    """Within the block, every launch (forward and backward) uses these
    :class:`~rnnbench.ops.plans.Plan` fields (``block_b``, ``block_h``, ``w_resident``,
    ``block_k``, ``num_warps``, ``num_stages``): for tests and tuning. A field named
    ``backward_<field>`` (``backward_block_k=256``) sets the backward's plan alone, one named
    ``forward_<field>`` (``forward_block_k=256``) the forward's."""
    token = _PLAN_OVERRIDE.set(tuple(sorted({**dict(_PLAN_OVERRIDE.get()), **fields}.items())))
    try:
        yield
    finally:
        _PLAN_OVERRIDE.reset(token)


@contextlib.contextmanager
def strict_fp32(mode: str):
    """Within the block, float32 recurrences that torch keeps out of TF32 multiply as ``mode``:
    ``"tf32x3"`` (the default: 3xTF32 on tensor cores, fp32-accurate) or ``"ieee"`` (FMA units).
    See :func:`rnnbench.ops.plans.dot_precision`; for comparisons and tests.

    Raises:
        ValueError: an unknown mode.
    """
    if mode not in STRICT_FP32_MODES:
        raise ValueError(f"unknown strict fp32 mode {mode!r}; choose from {', '.join(STRICT_FP32_MODES)}")
    token = _STRICT_FP32.set(mode)
    try:
        yield
    finally:
        _STRICT_FP32.reset(token)


def refusal(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device) -> str | None:
    """None if the kernels take this recurrence, else why not (one line, for the fallback warning).
    Cached per shape and setting (the modules ask on every call)."""
    return _cached_refusal(*_setting(cell, batch_size, hidden_size, dtype, device))


def _setting(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device) -> tuple:
    """The key of the cached choices: the call's shape, the dot precision that the TF32 setting
    and :func:`strict_fp32` of the moment give its dtype and width (``plans.layer_precision``), and
    any :func:`plan_override`."""
    precision = layer_precision(dtype, hidden_size, _STRICT_FP32.get()) if dtype in SUPPORTED_DTYPES else "ieee"
    return cell, batch_size, hidden_size, dtype, device, precision, _PLAN_OVERRIDE.get()


@functools.lru_cache(maxsize=1024)
def _cached_refusal(cell, batch_size, hidden_size, dtype, device, precision, override) -> str | None:
    if cell not in NUM_GATES:
        return f"no kernel for cell {cell!r}"
    if device.type == "cpu" and not INTERPRET:
        return "CPU tensors (the Triton kernels run on CUDA, or on the CPU under TRITON_INTERPRET=1)"
    if device.type not in ("cpu", "cuda"):
        return f"{device.type} tensors (the Triton kernels run on CUDA)"
    if dtype not in SUPPORTED_DTYPES:
        return f"dtype {dtype} (the kernels take float32, bfloat16, float16)"
    if batch_size < 1:
        return "an empty batch"
    try:
        _cached_plan(cell, batch_size, hidden_size, dtype, device, precision, "forward", override)
    except ValueError as err:
        return str(err)
    return None


def launch_or_refusal(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype,
                      device: torch.device) -> tuple[_Launch | None, str | None]:
    """``(layer_launch(...), None)`` if the kernels take this recurrence, else ``(None, refusal(...))``:
    both in one cached lookup, for callers that need both on every call (``rnnbench.nn``)."""
    return _cached_choice(*_setting(cell, batch_size, hidden_size, dtype, device))


@functools.lru_cache(maxsize=1024)
def _cached_choice(cell, batch_size, hidden_size, dtype, device, precision, override):
    reason = _cached_refusal(cell, batch_size, hidden_size, dtype, device, precision, override)
    if reason:
        return None, reason
    return _cached_launch(cell, batch_size, hidden_size, dtype, device, precision, override), None


def plan(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device,
         precision: str = "ieee", direction: str = "forward") -> Plan:
    """The launch plan for this recurrence (default, with any :func:`plan_override` applied).

    Raises:
        ValueError: the programs of this plan cannot all be resident (see ``choose_plan``).
    """
    return _cached_plan(cell, batch_size, hidden_size, dtype, device, precision, direction, _PLAN_OVERRIDE.get())


@functools.lru_cache(maxsize=1024)
def _cached_plan(cell, batch_size, hidden_size, dtype, device, precision, direction, override) -> Plan:
    return choose_plan(batch_size, hidden_size, NUM_GATES[cell], dtype, device, precision=precision,
                       direction=direction, bounded=cell != "rnn_relu", **dict(override))


class Produced(NamedTuple):
    """How a forward projects in its own launch (:func:`produces`): the projection's tiles, whether
    they run unmasked (``projection.produced_tiles``), and the producing programs."""

    tiles: Tiles
    is_even: bool
    programs: int


@dataclass(frozen=True)
class _Launch:
    """What every kernel of one call takes beyond its tensors: a plan per direction of time, for
    one cell, batch size and width (so the grids and the compile-time arguments are built once)."""

    forward: Plan
    backward: Plan
    precision: str
    upcast: bool
    hidden_size: int
    cell: str
    batch_size: int
    slots: int | None = None  # the CUDA device's multiprocessors (None under the interpreter)

    @property
    def num_gates(self) -> int:
        return NUM_GATES[self.cell]

    @property
    def backward_precision(self) -> str:
        """The reverse recurrence's dot precision (:func:`~rnnbench.ops.plans.backward_precision`)."""
        return backward_precision(self.precision, self.num_gates)

    @functools.cached_property
    def forward_grid(self) -> tuple[int, int]:
        """The forward kernel's grid: (programs over hidden units, programs over batch rows)."""
        return self.forward.grid(self.batch_size, self.hidden_size)

    @functools.cached_property
    def backward_grid(self) -> tuple[int, int]:
        """The backward kernel's grid."""
        return self.backward.grid(self.batch_size, self.hidden_size)

    def forward_constexprs(self, has_bias: bool, has_h0: bool, save: bool, has_c0: bool,
                           has_lengths: bool = False, pdl: bool = False, produce: tuple | None = None,
                           drop: bool = False, norm: bool = False) -> Constexprs:
        """The forward kernel's compile-time arguments with these flags (built once per flags);
        ``pdl``: a forward on FMA units launched by programmatic dependent launch
        (``launch.dependent_launch``; the other forwards take no such flag); ``produce``: the
        producing forward's ``(tiles, is_even)`` (:attr:`Plan.produce`, :class:`Produced`), None
        for none; ``drop``: recurrent dropout (``DROP``; the ``tl`` kernels of :data:`DROPOUT_PLAN`);
        ``norm``: layer norm (``LN``; the ``tl`` kernels on chip, :data:`LAYER_NORM_PLAN`)."""
        key = ("forward", has_bias, has_h0, save, has_c0, has_lengths, pdl, produce, drop, norm)
        return self._cached(key, lambda: self._with_flags(
            self.forward, {**self.forward_meta, **(self._produced(*produce) if produce else {})},
            HAS_BIAS=has_bias, HAS_H0=has_h0, SAVE=save, HAS_C0=has_c0, HAS_LENGTHS=has_lengths,
            **(_pdl_flags(pdl) if self.forward.fma else {}), DROP=drop, LN=norm))

    def _produced(self, tiles: Tiles, is_even: bool) -> dict:
        """A producing forward's compile-time arguments for its tiles: the RNN's the projection
        kernel's (``projection.produced_constexprs``), the LSTM's and GRU's ``ops/gluon_produce.py``'s."""
        if self.num_gates > 1:
            return gluon_produce.constexprs(self.precision, tiles.bn)
        return produced_constexprs(self.precision, self.upcast, tiles, is_even)

    def gluon_constexprs(self, has_bias: bool, has_h0: bool, save: bool, has_c0: bool, ahead: bool) -> Constexprs:
        """The Gluon forward's compile-time arguments (:attr:`Plan.gluon`) with these flags
        (``has_c0`` the LSTM's only, as its kernel takes it)."""
        def build():
            kp = k_padded(self.hidden_size)
            width, pieces = gluon_common.piece_width(kp), gluon_common.pieces(self.hidden_size, kp)
            flags = dict(H=self.hidden_size, HAS_BIAS=has_bias, HAS_H0=has_h0, SAVE=save, AHEAD=ahead,
                         BLOCK_B=self.forward.block_b, PIECE=width, PIECES=pieces,
                         REG_WEIGHTS=reg_weights_kernel(self.forward, pieces, save), num_warps=self.forward.num_warps)
            if self.cell == "lstm":
                flags["HAS_C0"] = has_c0
            return Constexprs(flags, self.forward)
        return self._cached(("gluon", has_bias, has_h0, save, has_c0, ahead), build)

    def backward_constexprs(self, has_d_out: bool, has_d_h_n: bool, has_d_c_n: bool,
                            has_lengths: bool = False, drop: bool = False, norm: bool = False) -> Constexprs:
        """The backward kernel's compile-time arguments with these flags (built once per flags);
        ``norm``: layer norm (``LN``, the on-chip ``tl`` backwards; not the split-K ones)."""
        key = ("backward", has_d_out, has_d_h_n, has_d_c_n, has_lengths, drop, norm)
        flags = {} if self.backward.split_k else dict(LN=norm)
        return self._cached(key, lambda: self._with_flags(
            self.backward, self.backward_meta, HAS_D_OUT=has_d_out, HAS_D_H_N=has_d_h_n, HAS_D_C_N=has_d_c_n,
            HAS_LENGTHS=has_lengths, DROP=drop, **flags))

    def _with_flags(self, plan: Plan, meta: dict, **flags) -> Constexprs:
        """``meta`` and the call's flags: the cell state's (``HAS_C0``, ``HAS_D_C_N``) for the
        LSTM only, ``RELU`` for the RNN only, ``DROP`` and ``LN`` for the ``tl`` kernels that take
        them, as the kernels take them; numbered with ``plan``, which the call's buffers are allocated by
        (:class:`~rnnbench.ops.launch.Constexprs`)."""
        if self.cell != "lstm":
            flags.pop("HAS_C0", None)
            flags.pop("HAS_D_C_N", None)
        # (DROP, recurrent dropout: the tl kernels alone take it, not the slices' or FMA's, and a compiled
        # launch passes every compile-time argument its kernel names, defaults too; DROPOUT_PLAN)
        if plan.fma or plan.pieces > 1:
            flags.pop("DROP", None)
            flags.pop("LN", None)  # (layer norm: the tl forwards alone, LAYER_NORM_PLAN)
        if self.cell.startswith("rnn_"):
            flags["RELU"] = self.cell == "rnn_relu"
        return Constexprs({**flags, **meta}, plan)

    def _cached(self, key: tuple, build) -> Constexprs:
        found = self._constexprs.get(key)
        if found is None:
            found = self._constexprs[key] = build()
        return found

    @functools.cached_property
    def _constexprs(self) -> dict:
        return {}

    @functools.cached_property
    def forward_meta(self) -> dict:
        """The forward kernel's compile-time arguments (built once per launch: host time)."""
        return self._meta(self.forward, True)

    @functools.cached_property
    def backward_meta(self) -> dict:
        """The backward kernel's compile-time arguments."""
        return self._meta(self.backward, False)

    def _meta(self, plan: Plan, forward: bool) -> dict:
        block_k, chunks = k_chunks(self.hidden_size, plan.block_k)
        precision = self.precision if forward else self.backward_precision
        if plan.fma and self.num_gates > 1:  # (ops/gluon_fma.py: a thread per unit, W_hh^T on chip)
            return {**gluon_fma.constexprs(self.num_gates, self.hidden_size, plan.num_warps,
                                           fma_warps(self.hidden_size), plan.fast_activations, plan.half_weights),
                    **gluon_produce.UNPRODUCED}
        if plan.fma:  # (ops/rnn/fma.py: FMA units, no tiles, no precision)
            meta = dict(H=self.hidden_size, K_PAD=k_padded(self.hidden_size), CHAINS=FMA_CHAINS,
                        num_warps=plan.num_warps)
            return {**meta, **UNPRODUCED, "FAST_ACT": plan.fast_activations} if forward else meta
        if plan.split_k and not forward:
            return dict(H=self.hidden_size, BLOCK_B=plan.block_b, BLOCK_H=plan.block_h, BLOCK_K=plan.block_k,
                        CHUNKS=split_k_pieces(self.hidden_size, plan.block_k), W_RESIDENT=plan.w_resident,
                        PRECISION=precision, UPCAST=self.upcast, num_warps=plan.num_warps,
                        num_stages=plan.num_stages, H_STRIDE=row_stride(plan, self.hidden_size))
        meta = dict(H=self.hidden_size, BLOCK_B=plan.block_b, BLOCK_H=plan.block_h, BLOCK_K=block_k,
                    K_PAD=k_padded(self.hidden_size), W_RESIDENT=plan.w_resident, ON_CHIP=plan.h_on_chip,
                    PRECISION=precision,
                    UPCAST=self.upcast, num_warps=plan.num_warps, num_stages=plan.num_stages)
        if not forward and self.num_gates > 1:  # (every constexpr by value: the cached launch passes them all)
            meta.update(gate_split_constexprs(plan, self.hidden_size))
        if forward:
            meta.update(CHUNKS=chunks, FAST_ACT=plan.fast_activations, SPLIT_ONCE=split_once_level(plan))
            if self.cell.startswith("rnn_"):
                meta.update(CHIP_SPLIT=chip_split_level(plan))
            else:
                meta.update(H_STRIDE=row_stride(plan, self.hidden_size))
        if plan.pieces > 1:  # (ops/<cell>/pieces.py's kernels alone take it)
            meta.update(PIECES=plan.pieces)
        return meta


def _pdl_flags(pdl: bool) -> dict:
    """An FMA forward's ``PDL`` flag, and Triton's launch option for it where set."""
    return dict(PDL=True, launch_pdl=True) if pdl else dict(PDL=False)


@functools.lru_cache(maxsize=1024)
def _cached_launch(cell, batch_size, hidden_size, dtype, device, precision, override) -> _Launch:
    plans = [_cached_plan(cell, batch_size, hidden_size, dtype, device, precision, d, override)
             for d in ("forward", "backward")]
    slots = multiprocessors(device) if device.type == "cuda" else None
    return _Launch(*plans, precision, upcast_dot(dtype), hidden_size, cell, batch_size, slots)


def recurrence_forward(cell: str, x_proj, w_hh, b_ih, b_hh, h0, c0, launch: _Launch, save: bool, lengths=None,
                       ready=None, x=None, w_ih=None, produced: Produced | None = None, drop=None, norm=None):
    """Run the forward kernel. ``x_proj [T, B, G*H]`` (no bias), or None with ``x [T, B, I]`` and
    ``w_ih [G*H, I]`` given (contiguous) and ``produced`` (:func:`produces`': a forward on FMA
    units, :attr:`Plan.produce`, which projects in its own launch), ``h0``/``c0`` ``[B, H]`` or
    ``[1, B, H]`` (contiguous) or None (zeros), biases ``[G*H]`` or None, ``lengths`` None or
    int32 ``[B]`` on the device (a variable-length batch: past its own length a sequence keeps
    its state and its output is zero, as ``rnnbench.reference.reference_forward``). ``ready``:
    ``x_proj`` is still being written, and this int32 ``[1]`` counts its steps written
    (``projection.project_ahead``); only where :func:`gluon_runs` (the Gluon kernels wait for it).

    Returns ``(h_buf [T+1, B, H], h_n, c_n, saved, c_buf)``: ``h_buf[1:]`` is the output
    (``h_buf[0]`` holds h0 only when saving), ``h_n``/``c_n`` ``[1, B, H]`` (the shape a
    one-layer module returns, so it needs no view of them) in the weights' dtype
    (``c_n`` None unless LSTM), ``saved`` the gate activations (fp32, or the weights' dtype with
    :attr:`Plan.half_saved`) and ``c_buf`` LSTM's fp32 cell states ``[T+1, B, H]`` (both None
    unless ``save``).

    ``drop``: recurrent dropout (with a :func:`dropout_launch_or_refusal`'s launch), ``(mask, out)``:
    ``mask [B, H]`` (contiguous, the weights' dtype) multiplies ``h_{t-1}`` where the recurrent
    product reads it, ``h_buf`` then holds ``h_t * mask`` (the weight gradients' operand) and
    ``out [T+1, B, H]`` receives the output from ``out[1]`` (the GRU's, saving, h0 at ``out[0]``).

    ``norm``: layer norm (with a :func:`layer_norm_launch_or_refusal`'s launch), ``(ln_ih [G*H],
    ln_hh [G*H], ln_c_w [H], ln_c_b [H], ln_hat, ln_rstd)`` (``ln_c_*`` the LSTM's, else None;
    contiguous): the kernel normalizes each step's ``x_proj`` row and recurrent product and the
    LSTM's cell (``rnnbench.reference.LayerNormWeights``; on an exchange plan each row's statistics
    gathered from every program's share, ``ln_part`` allocated here). Saving, it writes the normalized
    recurrent product into ``ln_hat [T, B, G*H]`` and its ``1/σ`` into ``ln_rstd [T, B]`` (fp32, the
    caller's: ``ops/layer_norm.py``); not saving, those two are None.
    """
    B, H = launch.batch_size, launch.hidden_size
    dtype = w_hh.dtype
    if x_proj is None:  # (written by the launch's producers)
        x_proj = torch.empty(*x.shape[:2], launch.num_gates * H, device=x.device, dtype=dtype)
    T, dev = x_proj.shape[0], x_proj.device
    grid = launch.forward_grid
    gluon = gluon_runs(launch.forward, lengths is not None, h0)
    # The shared barrier counters for the tl kernels that meet at a barrier, and for a producing
    # forward's count of tiles done (and of rows out, whose last zeroes both); the Gluon tensor-core
    # forwards take counted ones of their own (below), the other FMA forwards none.
    if produced is not None:
        counters, stream = _counters(2, dev)
    elif gluon or launch.forward.fma:
        counters, stream = None, launch_stream(dev)
    else:
        counters, stream = _counters(2 * grid[1], dev)
    h_buf = torch.empty(T + 1, B, H, device=dev, dtype=dtype)
    h_n = torch.empty(1, B, H, device=dev, dtype=dtype)
    lstm = cell == "lstm"
    has_h0, has_c0 = h0 is not None, lstm and c0 is not None
    # Absent tensors are zeros inside the kernel; a buffer of ours stands in for their pointers.
    biases = (b_ih, b_hh) if b_ih is not None else (w_hh, w_hh)
    h0 = h_buf if h0 is None else h0
    # Recurrent dropout: the mask, h0 times it (read by the step-0 product from memory) and the output
    # apart from h_buf; without it h_n and h0 stand in for their pointers (none of them read).
    mask, out = (h_n, h_n) if drop is None else drop
    h0_drop = h0 * mask if drop is not None and has_h0 else h0
    ln_ih, ln_hh, ln_c_w, ln_c_b, ln_hat, ln_rstd = (h_n,) * 6 if norm is None else (
        *norm[:2], *(h_n if t is None else t for t in norm[2:]))
    # (layer norm over programs, the exchange plans: each one's share of its rows' sums, a norm a slot)
    spread = norm is not None and not launch.forward.h_on_chip
    ln_part = torch.empty(3 if lstm else 2, grid[0], 2, B, device=dev, dtype=torch.float32) if spread else h_n
    # (no dependent launch with producers: they read x, which the launch before may be writing)
    constexprs = launch.forward_constexprs(b_ih is not None, has_h0, save, has_c0, lengths is not None,
                                           produced is None and dependent_launch(dev),
                                           None if produced is None else (produced.tiles, produced.is_even),
                                           drop is not None, norm is not None)
    lengths = h_n if lengths is None else lengths
    f32 = dict(device=dev, dtype=torch.float32)
    # 3xTF32 with operands split once (Plan.split_once): W_hh's split copy [2, G*H, H] (each program
    # writes its own rows) and h's exchange buffer, two slots of (high parts, remainders) [2, 2, B, H].
    split_once = launch.forward_meta.get("SPLIT_ONCE", 0)  # (none in the FMA forward's)
    # Levels 3 and 4 (Plan.half_operands, Plan.split_fp16) in fp16; level 3 keeps high parts alone
    # ([G*H, S] and [2, B, S], rows S = H_STRIDE apart: H, or padded to 16 bytes with Plan.pad_rows).
    # Level 5 (Plan.pad_rows with 16-bit weights): the weights' and h's own copies in their dtype.
    parts = 1 if split_once in (3, 5) else 2
    copy_dtype = w_hh.dtype if split_once == 5 else torch.float16 if split_once >= 3 else torch.float32
    split = dict(device=dev, dtype=copy_dtype)
    stride = launch.forward_meta.get("H_STRIDE", H)
    w_split = torch.empty(parts, w_hh.shape[0], stride, **split) if split_once >= 2 else h_n
    h_split = torch.empty(2, parts, B, stride, **split) if split_once else h_n
    if ready is not None and not gluon:
        raise ValueError("ready: x_proj written while the kernel runs is the Gluon kernels' (gluon_runs)")
    c_n = c_buf = None
    pieces = launch.forward.pieces > 1  # (ops/<cell>/pieces.py: c, or the GRU's fp32 h, between steps in memory)
    if lstm:
        c_n = torch.empty(1, B, H, device=dev, dtype=dtype)
        c_buf = torch.empty(T + 1, B, H, **f32) if save else torch.empty(2, B, H, **f32) if pieces else h_n
    saved_dtype = dtype if launch.forward.half_saved else torch.float32  # (the backward reads either)
    saved = torch.empty(T, B, (1 if cell.startswith("rnn_") else 4) * H, device=dev, dtype=saved_dtype) if save else h_n
    # The caller's tensors lead (they and the plan, which the constexprs carry, decide the specialisation);
    # the rest are allocated here.
    if gluon:
        # Arrival counters of its own, zeroed: the Gluon kernels leave them counted (ops/gluon_common.py).
        arrivals = _counted_counters(grid[1], dev)
        tail = (arrivals, arrivals if ready is None else ready, T, B)
        constexprs = launch.gluon_constexprs(b_ih is not None, has_h0, save, has_c0, ready is not None)
        if lstm:
            args = (x_proj, w_hh, *biases, h0, h_n if c0 is None else c0, h_buf, h_n, c_n, c_buf, saved, *tail)
            _LSTM_FORWARD_GLUON(grid, args, constexprs, stream, keyed=6)
        else:  # (the plan gives gluon to the LSTM and GRU only)
            _GRU_FORWARD_GLUON(grid, (x_proj, w_hh, *biases, h0, h_buf, h_n, saved, *tail), constexprs, stream,
                               keyed=5)
    elif launch.forward.fma and launch.num_gates > 1:  # (ops/lstm/fma.py, ops/gru/fma.py)
        # Producing (ops/gluon_produce.py): x and W_ih, the stream's counters (the last row out zeroes
        # them), the producers ahead of the rows; otherwise x_proj for x and W_ih, h_n for the
        # counters (none of them read).
        if produced is None:
            feed, tail, rows = (x_proj, x_proj), (h_n, T, B, 0, 0), grid
        else:
            feed, tail = (x, w_ih), (counters, T, B, x.shape[2], produced.programs)
            rows = (1, produced.programs + B)
        if lstm:
            args = (x_proj, w_hh, *biases, h0, h_n if c0 is None else c0, lengths, *feed, h_buf, h_n, c_n, c_buf,
                    saved, *tail)
            _LSTM_FORWARD_FMA(rows, args, constexprs, stream, keyed=9)
        else:
            args = (x_proj, w_hh, *biases, h0, lengths, *feed, h_buf, h_n, saved, *tail)
            _GRU_FORWARD_FMA(rows, args, constexprs, stream, keyed=8)
    elif launch.forward.fma and produced is not None:  # (ops/rnn/fma.py: producers, then the rows)
        args = (x_proj, w_hh, *biases, h0, lengths, x, w_ih, h_buf, h_n, saved, counters, T, B, *w_hh.stride(),
                x.shape[2], produced.programs)
        # (keyed: the caller's tensors, x and W_ih among them, decide the specialisation)
        _RNN_FORWARD_FMA((1, produced.programs + B), args, constexprs, stream, keyed=8)
    elif launch.forward.fma:  # (ops/rnn/fma.py, its projection launched before it)
        args = (x_proj, w_hh, *biases, h0, lengths, x_proj, x_proj, h_buf, h_n, saved, h_n, T, B, *w_hh.stride(),
                0, 0)  # (x_proj again for x and W_ih, h_n for the counters: none of them read)
        _RNN_FORWARD_FMA(grid, args, constexprs, stream, keyed=8)
    elif lstm and pieces:
        args = (x_proj, w_hh, *biases, h0, h_n if c0 is None else c0, lengths, h_buf, h_n, c_n, c_buf, saved,
                w_split, h_split, counters, T, B)
        _LSTM_FORWARD_PIECES(grid, args, constexprs, stream, keyed=7)
    elif lstm:
        # (keyed through the gains: the mask may be the caller's, h0_drop its h0 itself, the gains the module's)
        args = (x_proj, w_hh, *biases, h0, h_n if c0 is None else c0, lengths, mask, h0_drop, ln_ih, ln_hh, ln_c_w,
                ln_c_b, ln_hat, ln_rstd, ln_part, h_buf, out, h_n, c_n, c_buf, saved, w_split, h_split, counters, T, B)
        _LSTM_FORWARD(grid, args, constexprs, stream, keyed=16)
    elif pieces:  # (the GRU's: its fp32 h in two slots, ops/gru/pieces.py)
        args = (x_proj, w_hh, *biases, h0, lengths, h_buf, h_n, saved, torch.empty(2, B, H, **f32), counters, T, B)
        _GRU_FORWARD_PIECES(grid, args, constexprs, stream, keyed=6)
    else:
        args = (x_proj, w_hh, *biases, h0, lengths, mask, h0_drop, ln_ih, ln_hh, ln_hat, ln_rstd, ln_part, h_buf, out,
                h_n, saved, w_split, h_split, counters, T, B)
        (_GRU_FORWARD if cell == "gru" else _RNN_FORWARD)(grid, args, constexprs, stream, keyed=13)
    if not save:
        c_buf = saved = None
    return h_buf, h_n, c_n, saved, c_buf


def produces(launch: _Launch, x) -> Produced | None:
    """How a layer's forward projects in the recurrence's launch (:attr:`Plan.produce`), or None
    where it does not: where its plan says so, no CUDA graph is being captured, the product is one
    our tiles take eagerly (at most ``projection.EVEN_MAX_FLOP``; past it cuBLAS' kernel is the
    faster), and every tile (the RNN's ``projection.produced_tiles``; the LSTM's and GRU's
    ``gluon_produce.tiles_for``, the wider where the narrower would be too many) has a producer of
    its own, so the rows wait for one tile's time, not for rounds of them.

    Measured on the H100 against the projection launched before it (``results/h100/produce``,
    RNN on FMA units, bit for bit the same outputs): eager forwards at batch 20, hidden 100, 30
    steps (38 tiles) 0.91x the time in fp32, TF32 and bf16, at batch 32, hidden 128 (30 tiles)
    0.97x; but graphed (no host time to save) 0.92x as fast at batch 32, and wherever the tiles
    took rounds (188 tiles on 32 producers at batch 100; 376 on 112 at 300 steps) 0.74-0.97x as
    fast graphed and 0.92-1.13x eagerly."""
    if not launch.forward.produce or capturing(x):
        return None
    make_cublas(x)  # (a later capture of this call takes cuBLAS' projection)
    T, B, I = x.shape
    width = launch.num_gates * launch.hidden_size
    if 2 * T * B * I * width > EVEN_MAX_FLOP:
        return None
    if launch.num_gates > 1:  # (ops/gluon_produce.py: the narrowest tiles that have a producer each; CUDA only)
        found = gluon_produce.tiles_for(T * B, width, launch.slots - B)
        if found is None:
            return None
        bn, count = found
        return Produced(Tiles(gluon_produce.TILE_M, bn, gluon_produce.TILE_K), False, count)
    tiles, is_even, count = produced_tiles(T * B, launch.hidden_size, I)
    programs = producers(count, B, launch.slots)
    return Produced(tiles, is_even, programs) if count <= programs else None


def gluon_runs(plan: Plan, has_lengths: bool, h0) -> bool:
    """Whether a forward call runs its cell's Gluon kernel (``lstm/gluon.py``, ``gru/gluon.py``):
    its plan asks for it (:attr:`Plan.gluon`, the LSTM's and GRU's), no lengths are given, and
    ``h0`` (None: zeros) starts on a 16-byte boundary. The kernel copies h0 into shared memory as it
    does h_{t-1}, by ``cp.async``, which the compiler emits only for a pointer it knows aligned
    (Triton specialises on 16 bytes): a deeper layer's slice of a module's state at an odd batch,
    for one, runs the ``tl`` kernel."""
    return plan.gluon and not has_lengths and (h0 is None or not h0.data_ptr() & 15)


def recurrence_backward(cell: str, d_out, d_h_n, d_c_n, saved, c_buf, h_buf, w_hh, launch: _Launch, lengths=None,
                        drop=None, norm=None):
    """Run the backward kernel. ``d_out [T, B, H]``, ``d_h_n``/``d_c_n`` ``[B, H]`` or ``[1, B, H]``
    (contiguous), each None when no gradient flows there (zeros inside the kernel); ``lengths`` as
    the forward's (``d_out`` past a sequence's end is ignored); ``drop`` the forward's recurrent
    dropout mask ``[B, H]`` or None (the GRU's ``c_buf`` then its forward's ``out``, h itself).

    Returns ``(d_gates_x, d_gates_h, d_h0, d_c0)``: gradients of the input-side and recurrent
    pre-activations ``[T, B, G*H]`` (the same tensor except for the GRU), ``d_h0`` and ``d_c0``
    (None unless LSTM) in the weights' dtype.

    ``norm``: the forward's layer norm (:func:`layer_norm_launch_or_refusal`'s launch, trained),
    ``(ln_hat, ln_rstd, ln_hh, d_raw, ln_c_w, ln_c_b, ln_sums)``: what the forward saved, the
    recurrent product's gain, ``d_raw [T, B, G*H]`` (the caller's, the weights' dtype) for the
    gradient of the recurrent product before its norm (``W_hh``'s), and the LSTM's cell gains and
    ``ln_sums [2, B, H]`` fp32 for each row's sums of the cell norm's gain and shift gradients (the
    GRU's and RNN's three None). ``d_gates_x`` and ``d_gates_h`` are then the gradients of the
    normalized products (times their gains), as the biases and gains take them.
    """
    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    dev, dtype = h_buf.device, w_hh.dtype
    plan_ = launch.backward
    grid = launch.backward_grid
    # (FMA: no barrier; gate split: a counter per group of programs too, common._group_counter)
    group = launch.backward_meta.get("GATE_GROUP", 0)
    counters, stream = (None, launch_stream(dev)) if plan_.fma else _counters(
        (2 + (grid[0] // group if group else 0)) * grid[1], dev)
    d_h0 = torch.empty(B, H, device=dev, dtype=dtype)
    constexprs = launch.backward_constexprs(d_out is not None, d_h_n is not None, d_c_n is not None,
                                            lengths is not None, drop is not None, norm is not None)
    d_out = h_buf if d_out is None else d_out  # unused pointer when absent
    mask = d_h0 if drop is None else drop
    ln = (d_h0,) * 7 if norm is None else tuple(d_h0 if t is None else t for t in norm)
    # (layer norm over programs, the transpose plans: each one's share of its rows' sums, a norm a slot)
    ln_part = torch.empty(3 if cell == "lstm" else 1, grid[0], 2, B, device=dev, dtype=torch.float32) if (
        norm is not None and not plan_.h_on_chip) else d_h0
    h_states = c_buf if drop is not None and cell == "gru" else h_buf  # (the GRU's h_{t-1}: z's gradient)
    d_h_n = d_h0 if d_h_n is None else d_h_n
    lengths = d_h0 if lengths is None else lengths
    if plan_.split_k:  # the LSTM's and GRU's (choose_plan refuses the RNN's): W_hh as it is, partials of dh
        # (rows H_STRIDE apart: padded to 16 bytes where H is not a multiple of 8, Plan.pad_rows)
        partials = torch.empty(2, grid[0], B, launch.backward_meta["H_STRIDE"], device=dev,
                               dtype=dtype if plan_.half_partials else torch.float32)
        if cell == "lstm":
            d_gates = torch.empty(T, B, 4 * H, device=dev, dtype=dtype)
            d_c0 = torch.empty_like(d_h0)
            _LSTM_BACKWARD_SPLIT_K(grid, (d_out, d_h_n, d_c0 if d_c_n is None else d_c_n, saved, c_buf, w_hh, d_gates,
                                          d_h0, d_c0, lengths, mask, partials, counters, T, B), constexprs, stream)
            return d_gates, d_gates, d_h0, d_c0
        d_gates_h = torch.empty(T, B, 3 * H, device=dev, dtype=dtype)
        d_gates_x = torch.empty_like(d_gates_h)
        _GRU_BACKWARD_SPLIT_K(grid, (d_out, d_h_n, saved, h_states, w_hh, d_gates_h, d_gates_x, d_h0, lengths, mask,
                                     partials, counters, T, B), constexprs, stream)
        return d_gates_x, d_gates_h, d_h0, None
    if plan_.fma:  # (the RNN's only: W_hh^T through swapped strides)
        d_pre = torch.empty(T, B, H, device=dev, dtype=dtype)
        _RNN_BACKWARD_FMA(grid, (d_out, d_h_n, saved, w_hh, d_pre, d_h0, lengths, T, B, *reversed(w_hh.stride())),
                          constexprs, stream)
        return d_pre, d_pre, d_h0, None
    w_hh_t = w_hh.t().contiguous()  # our units' columns of W_hh as contiguous rows
    # Plan.gate_split: each gate's partial of dh, two slots by step parity [2, G, B, H] (fp32)
    partials = torch.empty(2, launch.num_gates, B, H, device=dev, dtype=torch.float32) if plan_.gate_split else d_h0
    if cell == "lstm":
        d_gates = torch.empty(T, B, 4 * H, device=dev, dtype=dtype)
        d_c0 = torch.empty_like(d_h0)
        args = (d_out, d_h_n, d_c0 if d_c_n is None else d_c_n, saved, c_buf, w_hh_t, d_gates, d_h0, d_c0, lengths)
        if plan_.pieces > 1:  # (ops/lstm/pieces.py: the gradients reaching h and c in two slots, [2, 2, B, H])
            _LSTM_BACKWARD_PIECES(grid, (*args, partials, counters,
                                         torch.empty(2, 2, B, H, device=dev, dtype=torch.float32), T, B),
                                  constexprs, stream)
        else:
            _LSTM_BACKWARD(grid, (*args, mask, *ln, ln_part, partials, counters, T, B), constexprs, stream)
        return d_gates, d_gates, d_h0, d_c0
    if cell == "gru":
        d_gates_h = torch.empty(T, B, 3 * H, device=dev, dtype=dtype)
        d_gates_x = torch.empty_like(d_gates_h)
        args = (d_out, d_h_n, saved, h_states, w_hh_t, d_gates_h, d_gates_x, d_h0, lengths)
        if plan_.pieces > 1:  # (ops/gru/pieces.py: the gradient reaching h in two slots, [2, B, H])
            _GRU_BACKWARD_PIECES(grid, (*args, partials, counters, torch.empty(2, B, H, device=dev,
                                                                               dtype=torch.float32), T, B),
                                 constexprs, stream)
        else:
            _GRU_BACKWARD(grid, (*args, mask, *ln[:4], ln_part, partials, counters, T, B), constexprs, stream)
        return d_gates_x, d_gates_h, d_h0, None
    d_pre = torch.empty(T, B, H, device=dev, dtype=dtype)
    _RNN_BACKWARD(grid, (d_out, d_h_n, saved, w_hh_t, d_pre, d_h0, lengths, mask, *ln[:4], ln_part, counters, T, B),
                  constexprs, stream)
    return d_pre, d_pre, d_h0, None


def projects_ahead(plan: Plan, x, lengths, h0) -> bool:
    """Whether a layer's forward computes its input projection ahead (``projection.project_ahead``,
    overlapping the kernel): the plan allows it (:attr:`Plan.input_ahead`), ``x`` [T, B, I] is on
    CUDA with at least :data:`~rnnbench.ops.plans.AHEAD_MIN_STEPS` steps, a CUDA graph is being
    captured, and a Gluon kernel runs (:func:`gluon_runs`: the LSTM's or GRU's, the kernels that
    wait for the steps written).

    Only in graphs: there the projection's time left the step (H200, FlashRNN's fp16 LSTM shape,
    graphed forward 2.485 against 2.560 ms, training 7.079 against 7.169), but an eager call already
    runs the projection while the host prepares the kernel's launch, and projecting ahead added
    host time before it (2.775 against 2.645 ms eager; results/h200/input-ahead)."""
    return (plan.input_ahead and x.is_cuda and x.shape[0] >= AHEAD_MIN_STEPS
            and torch.cuda.is_current_stream_capturing() and gluon_runs(plan, lengths is not None, h0))


def _contiguous(t):
    return None if t is None else t.contiguous()


def _layer_forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, save, lengths, mask=None, norm=None):
    """The input projection and the forward kernel: ``(output, h_n, c_n, h_buf, saved, c_buf)``;
    the projection ahead, overlapping the kernel, where :func:`projects_ahead`. ``mask``: recurrent
    dropout's ``[B, H]`` (:func:`run_layer`), with a :func:`dropout_launch_or_refusal`'s launch.
    ``norm``: layer norm's ``LayerNormWeights`` (not saving), with a
    :func:`layer_norm_launch_or_refusal`'s launch: every norm in the kernel, so that the call is
    launches of ours alone (``ops/replay.py`` records it)."""
    if mask is not None or norm is not None:  # (their plans: no projection of the kernel's own, none ahead)
        x_proj = input_projection(x, w_ih, launch.precision, launch.upcast)
        out, drop, ln = None, None, None
        if mask is not None:  # (the output apart from h_buf, which holds h times the mask)
            out = torch.empty(x.shape[0] + 1, x.shape[1], launch.hidden_size, device=x.device, dtype=w_hh.dtype)
            drop = (mask, out)
        if norm is not None:
            ln = (*(_contiguous(t) for t in norm), None, None)  # (not saving: no ln_hat, ln_rstd)
        h_buf, h_n, c_n, saved, c_buf = recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, h0, c0, launch, save,
                                                           lengths, drop=drop, norm=ln)
        if cell == "gru" and save and mask is not None:  # (its backward's h_{t-1} itself, in the cell states' place)
            c_buf = out
        return (h_buf if out is None else out)[1:], h_n, c_n, h_buf, saved, c_buf
    ready = finish = None
    produced = produces(launch, x)
    if produced is not None:
        h_buf, h_n, c_n, saved, c_buf = recurrence_forward(cell, None, w_hh, b_ih, b_hh, h0, c0, launch, save, lengths,
                                                           x=x.contiguous(), w_ih=w_ih, produced=produced)
        return h_buf[1:], h_n, c_n, h_buf, saved, c_buf
    if projects_ahead(launch.forward, x, lengths, h0):
        x_proj, ready, finish = project_ahead(x, w_ih)
    else:
        x_proj = input_projection(x, w_ih, launch.precision, launch.upcast)  # [T, B, G*H], rows of stride G*H
    try:
        h_buf, h_n, c_n, saved, c_buf = recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, h0, c0, launch, save,
                                                           lengths, ready)
    finally:
        if finish is not None:  # (the side stream joins the current one whatever happened)
            finish()
    return h_buf[1:], h_n, c_n, h_buf, saved, c_buf


class RecurrentLayer(torch.autograd.Function):
    """Autograd wrapper of one layer, one direction. See :func:`recurrent_layer`."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, save, lengths, mask=None):
        out, h_n, c_n, h_buf, saved, c_buf = _layer_forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, save,
                                                            lengths, mask)
        if save:
            RecurrentLayer.keep_for_backward(ctx, x, h0, c0, w_ih, w_hh, b_ih, cell, launch, lengths, h_buf, saved,
                                             c_buf, mask)
        return out, h_n, c_n

    @staticmethod
    def keep_for_backward(ctx, x, h0, c0, w_ih, w_hh, b_ih, cell, launch, lengths, h_buf, saved, c_buf,
                          mask=None) -> None:
        """What :meth:`gradients` reads of the forward (``ops/replayed_layer.py`` keeps the same)."""
        ctx.save_for_backward(x, w_ih, w_hh, h_buf, saved, c_buf)
        ctx.cell, ctx.launch, ctx.has_bias, ctx.lengths, ctx.mask = cell, launch, b_ih is not None, lengths, mask
        ctx.h0_shape = None if h0 is None else h0.shape  # [B, H] or [1, B, H]: their gradients' shapes
        ctx.c0_shape = None if c0 is None else c0.shape
        # An output without a gradient (h_n, c_n of a language model's carried state) arrives as
        # None, not as a tensor of zeros to fill and read: the kernel takes absent ones as zeros.
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, d_out, d_h_n, d_c_n):
        # (ctx.saved_tensors read once: every read runs the saved-tensor hooks' unpack again, which
        # under save_on_cpu copies each tensor back to the device)
        return RecurrentLayer.gradients(ctx, ctx.saved_tensors, d_out, d_h_n, d_c_n)

    @staticmethod
    def gradients(ctx, kept, d_out, d_h_n, d_c_n):
        """:meth:`backward`'s gradients from ``kept`` (``ctx.saved_tensors``, unpacked by the
        caller), in the weights' dtype: under autocast this runs again with it off (only then:
        entering autocast costs host time every call)."""
        device_type = kept[0].device.type
        if torch.is_autocast_enabled(device_type):
            with torch.autocast(device_type, enabled=False):
                return RecurrentLayer.gradients(ctx, kept, d_out, d_h_n, d_c_n)
        x, w_ih, w_hh, h_buf, saved, c_buf = kept
        T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
        d_gx, d_gh, d_h0, d_c0 = recurrence_backward(ctx.cell, _contiguous(d_out), _contiguous(d_h_n),
                                                     _contiguous(d_c_n) if ctx.cell == "lstm" else None,
                                                     saved, c_buf, h_buf, w_hh, ctx.launch, ctx.lengths, ctx.mask)
        need = ctx.needs_input_grad
        bias = ctx.has_bias
        flat_gx = d_gx.view(T * B, -1)
        flat_gh = flat_gx if d_gh is d_gx else d_gh.view(T * B, -1)  # one tensor stays one (the bias sums)
        grads = layer_gradients(flat_gx, flat_gh, x.reshape(T * B, -1), h_buf[:T].view(T * B, H), w_ih,
                                (need[0], need[3], need[4], bias and need[5], bias and need[6]),
                                ctx.launch.precision, ctx.launch.upcast)
        dx = grads.dx.view(T, B, -1) if need[0] else None
        dh0 = d_h0.view(ctx.h0_shape) if need[1] else None
        dc0 = d_c0.view(ctx.c0_shape) if d_c0 is not None and need[2] else None
        return dx, dh0, dc0, grads.dw_ih, grads.dw_hh, grads.db_ih, grads.db_hh, None, None, None, None, None


def recurrent_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, recurrent_mask=None):
    """One layer, one direction, forward in time, on the Triton kernels; differentiable.

    Args:
        cell: ``lstm``, ``gru``, ``rnn_tanh`` or ``rnn_relu``.
        x: ``[T, B, I]``. h0, c0: ``[B, H]`` or None for zeros (``c0`` LSTM only, else None).
        w_ih ``[G*H, I]``, w_hh ``[G*H, H]``, b_ih/b_hh ``[G*H]`` or None: torch.nn layout and
        gate order (i, f, g, o; r, z, n). All tensors on one device, in one dtype.
        lengths: None, or ``[B]`` integers from 0 to T (any device; read once on the host): a
        variable-length batch, sequence ``b`` the first ``lengths[b]`` steps of ``x[:, b]``.
        Past its end a sequence keeps its state (``h_n``, ``c_n`` are its own last step's), its
        output is zero and gets no gradient, and the padded inputs get none: what
        ``torch.nn.utils.rnn.pack_padded_sequence`` gives torch.nn (and
        :func:`rnnbench.reference.reference_forward` with ``lengths``).
        recurrent_mask: None, or recurrent dropout's mask ``[B, H]``: ``h_{t-1}`` enters the
        recurrent product ``h_{t-1} W_hh^T`` times it at every step, the output, final states and
        the GRU's ``z * h_{t-1}`` take ``h_t`` itself (Gal and Ghahramani, 2016, one mask for every step; Keras'
        ``recurrent_dropout``, its masks drawn as 0 or ``1 / (1 - p)``; ``rnnbench.reference``'s
        ``recurrent_masks``).

    Returns:
        ``(output [T, B, H], h_n [B, H], c_n [B, H] or None)``.

    Raises:
        ValueError: the kernels refuse this call (see :func:`refusal`, :func:`dropout_launch_or_refusal`),
        ``lengths`` is not ``[B]`` integers from 0 to T, or ``recurrent_mask`` is not ``[B, H]``.
    """
    T, B, _ = x.shape
    H = w_hh.shape[1]
    if recurrent_mask is None:
        launch, reason = launch_or_refusal(cell, B, H, x.dtype, x.device)
    else:
        if recurrent_mask.shape != (B, H):
            raise ValueError(f"recurrent_mask must be [{B}, {H}] (batch_size, hidden_size), got "
                             f"{list(recurrent_mask.shape)}")
        recurrent_mask = recurrent_mask.to(x.dtype)
        launch, reason = dropout_launch_or_refusal(cell, B, H, x.dtype, x.device)
    if reason:
        raise ValueError(f"the Triton {cell} kernels cannot run this call: {reason}")
    out, h_n, c_n = run_layer(cell, x, h0, c0, w_ih, w_hh, b_ih, b_hh, launch, kernel_lengths(lengths, T, B, x.device),
                              recurrent_mask)
    return out, h_n.squeeze(0), None if c_n is None else c_n.squeeze(0)


# Recurrent dropout runs the ``tl`` kernels of ops/<cell>/kernels.py (the ones that take DROP): its
# plans ask for none of the others (FMA, Gluon, producers, slices) and for none of the operands whose
# scales take |h_t| <= 1 (fp16 operands, 3xFP16, the on-chip RNN's split), which a mask's
# 1 / (1 - p) breaks.
DROPOUT_PLAN = dict(fma=False, backward_fma=False, gluon=False, produce=False, pieces=1, backward_pieces=1,
                    half_operands=False, split_fp16=False, on_chip_split="")


def dropout_launch_or_refusal(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype,
                              device: torch.device) -> tuple[_Launch | None, str | None]:
    """:func:`launch_or_refusal` for a layer with recurrent dropout (:data:`DROPOUT_PLAN` over any
    :func:`plan_override`): ``(launch, None)``, or ``(None, why not)`` (a plan that would still run a
    kernel without the mask among them)."""
    with plan_override(**DROPOUT_PLAN):
        launch, reason = launch_or_refusal(cell, batch_size, hidden_size, dtype, device)
    if launch is not None and not _drops(launch):
        return None, "recurrent dropout: no plan of its kernels for this shape"
    return launch, reason


# Layer norm runs the ``tl`` kernels: where they fit, with one program holding every unit of its batch
# rows (h on chip), whose mean and variance are sums in its registers; past that width the exchange
# plans (the backward's the transpose, neither split-K nor gate-split), each program publishing its
# share of its rows' sums and reading everyone's after a grid barrier (docs/kernels.md, "Layer norm").
LAYER_NORM_PLAN = dict(h_on_chip=True, fma=False, gluon=False, produce=False, pieces=1)
LAYER_NORM_EXCHANGE_PLAN = dict(h_on_chip=False, fma=False, gluon=False, produce=False, pieces=1, backward_pieces=1,
                                backward_split_k=False, backward_gate_split=0)


def layer_norm_launch_or_refusal(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype,
                                 device: torch.device, trains: bool = False) -> tuple[_Launch | None, str | None]:
    """:func:`launch_or_refusal` for a layer-normalized layer: ``(launch, None)``, or ``(None, why
    not)``. :data:`LAYER_NORM_PLAN` over any :func:`plan_override` where one program holds a batch
    row (on an H200: LSTM and GRU to hidden 64 in fp32, 128 in 16-bit; the RNN to 128 and 256), past
    those widths (or under an override asking ``h_on_chip=False``) :data:`LAYER_NORM_EXCHANGE_PLAN`.
    ``trains``: a call that wants gradients, whose backward's plan must take ``LN`` too."""
    reason = None
    if dict(_PLAN_OVERRIDE.get()).get("h_on_chip") is not False:
        with plan_override(**LAYER_NORM_PLAN):
            launch, reason = launch_or_refusal(cell, batch_size, hidden_size, dtype, device)
        if reason is None and _normalizes(launch, trains):
            return launch, None
    with plan_override(**LAYER_NORM_EXCHANGE_PLAN):
        launch, spread = launch_or_refusal(cell, batch_size, hidden_size, dtype, device)
    if spread is None and _normalizes(launch, trains):
        return launch, None
    return None, f"layer norm: no plan of its kernels for this shape ({spread or reason or 'none takes it'})"


def _normalizes(launch: _Launch, trains: bool) -> bool:
    """Whether ``launch``'s forward runs a ``tl`` kernel that takes ``LN`` (not the FMA, Gluon,
    producing or sliced ones) and, with ``trains``, its backward too (no FMA, slices, split-K or
    gate split)."""
    forward, backward = launch.forward, launch.backward
    if forward.fma or forward.gluon or forward.produce or forward.pieces > 1:
        return False
    return not trains or not (backward.fma or backward.pieces > 1 or backward.split_k or backward.gate_split)


def _drops(launch: _Launch) -> bool:
    """Whether both of ``launch``'s plans run kernels that take ``DROP`` (:data:`DROPOUT_PLAN`)."""
    forward, backward = launch.forward, launch.backward
    return not (forward.fma or forward.gluon or forward.produce or forward.pieces > 1 or forward.on_chip_split
                or split_once_level(forward) in (3, 4) or backward.fma or backward.pieces > 1)


def layer_launch(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device) -> _Launch:
    """The plans and precisions of every layer of this shape (cached; any :func:`plan_override`
    and the TF32 setting of the moment applied). Call :func:`refusal` first: a shape the kernels
    refuse raises ValueError here."""
    return _cached_launch(*_setting(cell, batch_size, hidden_size, dtype, device))


def saves_for_backward(*tensors) -> bool:
    """Whether a layer's forward on ``tensors`` (None for absent ones) saves for a backward:
    gradients are enabled and one of them wants one."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def run_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih, b_hh, launch: _Launch, lengths=None, mask=None, norm=None):
    """:func:`recurrent_layer` without its checks, for callers that made them (``rnnbench.nn``
    checks once per call of a stack, and takes ``launch`` from :func:`layer_launch` once for all
    its layers). Same arguments, except that ``h0``/``c0`` may also be ``[1, B, H]`` (a one-layer
    module's state as it comes; their gradients take their shape), ``lengths`` comes as
    :func:`kernel_lengths` returns it; returns ``h_n``/``c_n`` as ``[1, B, H]``. ``mask``:
    recurrent dropout's ``[B, H]`` in the weights' dtype (``launch`` a :func:`dropout_launch_or_refusal`'s).
    ``norm``: layer norm's ``rnnbench.reference.LayerNormWeights`` (``launch`` a
    :func:`layer_norm_launch_or_refusal`'s; with gradients its ``trains=True`` one, through
    ``ops/layer_norm.LayerNormLayer``).

    Raises:
        ValueError: ``seq_len`` is 0.
    """
    if x.shape[0] < 1:
        raise ValueError("seq_len must be at least 1")
    save = saves_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    # The kernels read rows of stride H: contiguous tensors (a no-op call for those that are).
    args = (x, _contiguous(h0), _contiguous(c0) if cell == "lstm" else None, w_ih.contiguous(), w_hh.contiguous(),
            _contiguous(b_ih), _contiguous(b_hh), cell, launch, save, lengths, _contiguous(mask))
    normed_training = norm is not None and (save or saves_for_backward(*norm))
    if not torch.is_autocast_enabled(x.device.type):
        # Nothing to record when no gradient is wanted (autograd's Function machinery costs host
        # time on every call).
        if normed_training:
            return _layer_norm_training(args, norm)
        return RecurrentLayer.apply(*args) if save else _layer_forward(*args, norm)[:3]
    with torch.autocast(x.device.type, enabled=False):  # every matmul in the weights' dtype
        if normed_training:
            return _layer_norm_training(args, norm)
        return RecurrentLayer.apply(*args) if save else _layer_forward(*args, norm)[:3]


def _layer_norm_training(args: tuple, norm) -> tuple:
    """:func:`run_layer`'s ``args`` and ``norm`` through ``ops/layer_norm.LayerNormLayer`` (imported
    here: it imports this module)."""
    from .layer_norm import LayerNormLayer

    x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, _, lengths, _ = args
    return LayerNormLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, *(_contiguous(t) for t in norm), cell, launch,
                                lengths)
