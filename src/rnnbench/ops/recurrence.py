"""One recurrent layer in one direction on the Triton kernels, as a torch.autograd.Function.

Forward: the input projection of every step as one matmul (``x_proj = x W_ih^T + biases``,
``[T*B, I] x [I, G*H]``), then **one kernel launch for all T steps** (``ops/<cell>/kernels.py``).
Backward: one launch running the recurrence in reverse time, producing the gradients of the
pre-activations of every step (``d_gates [T, B, G*H]``), ``dh0`` and ``dc0``; then the weight and
input gradients as large matmuls over them::

    dW_hh = d_gates_h^T h_{t-1}     dW_ih = d_gates_x^T x     db = sums over (T, B)
    dx = d_gates_x W_ih

Every state is fp32 inside the kernels (cell state, the program's slice of h, accumulation) for
every dtype; the tensors the user sees are in the weights' dtype.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import torch

from .common import INTERPRET, SUPPORTED_DTYPES, Plan, choose_plan, dot_precision, next_pow2, upcast_dot
from .gru.kernels import gru_backward_kernel, gru_forward_kernel
from .lstm.kernels import lstm_backward_kernel, lstm_forward_kernel
from .rnn.kernels import rnn_backward_kernel, rnn_forward_kernel

NUM_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
_PLAN_OVERRIDE: contextvars.ContextVar[dict] = contextvars.ContextVar("rnnbench_plan_override", default={})


@contextlib.contextmanager
def plan_override(**fields):
    """Within the block, every launch uses these :class:`~rnnbench.ops.common.Plan` fields
    (``block_b``, ``block_h``, ``w_resident``, ``block_k``, ``num_warps``): for tests and tuning."""
    token = _PLAN_OVERRIDE.set({**_PLAN_OVERRIDE.get(), **fields})
    try:
        yield
    finally:
        _PLAN_OVERRIDE.reset(token)


def refusal(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device) -> str | None:
    """None if the kernels take this recurrence, else why not (one line, for the fallback warning)."""
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
        plan(cell, batch_size, hidden_size, dtype, device)
    except ValueError as err:
        return str(err)
    return None


def plan(cell: str, batch_size: int, hidden_size: int, dtype: torch.dtype, device: torch.device) -> Plan:
    """The launch plan for this recurrence (default, with any :func:`plan_override` applied)."""
    return choose_plan(batch_size, hidden_size, NUM_GATES[cell], dtype, device, **_PLAN_OVERRIDE.get())


@dataclass(frozen=True)
class _Launch:
    """What every kernel of one call takes beyond its tensors."""

    plan: Plan
    precision: str
    upcast: bool

    def grid(self, batch_size: int, hidden_size: int) -> tuple[int, int]:
        return self.plan.grid(batch_size, hidden_size)

    def meta(self, hidden_size: int) -> dict:
        return dict(H=hidden_size, BLOCK_B=self.plan.block_b, BLOCK_H=self.plan.block_h,
                    BLOCK_K=min(self.plan.block_k, max(16, next_pow2(hidden_size))),
                    K_PAD=max(16, next_pow2(hidden_size)), W_RESIDENT=self.plan.w_resident,
                    PRECISION=self.precision, UPCAST=self.upcast, num_warps=self.plan.num_warps)


def _counters(launch: _Launch, batch_size: int, hidden_size: int, device) -> torch.Tensor:
    """One zeroed arrival counter per batch block, for the per-step barrier."""
    return torch.zeros(launch.grid(batch_size, hidden_size)[1], dtype=torch.int32, device=device)


def _input_projection(cell: str, x, w_ih, b_ih, b_hh, hidden_size: int) -> torch.Tensor:
    """``[T, B, G*H]``: ``x W_ih^T`` plus every bias that can be added before the recurrence
    (all of them, except the GRU's b_hn, which the reset gate multiplies)."""
    bias = None
    if b_ih is not None:
        bias = b_ih + b_hh
        if cell == "gru":  # b_hn stays inside: n = tanh(xn + r * (W_hn h + b_hn))
            bias = torch.cat([bias[: 2 * hidden_size], b_ih[2 * hidden_size:]])
    flat = x.reshape(-1, x.shape[-1])
    proj = torch.addmm(bias, flat, w_ih.t()) if bias is not None else flat @ w_ih.t()
    return proj.view(x.shape[0], x.shape[1], -1)


def recurrence_forward(cell: str, x_proj, w_hh, b_hn, h0, c0, launch: _Launch, save: bool):
    """Run the forward kernel. ``x_proj [T, B, G*H]``, ``h0``/``c0`` ``[B, H]``.

    Returns ``(h_buf [T+1, B, H], c_n fp32 [B, H] or None, saved, c_buf)``: ``h_buf[1:]`` is the
    output, ``saved`` the fp32 gate activations (None unless ``save``), ``c_buf`` LSTM's fp32
    cell states ``[T+1, B, H]`` (only ``[1, B, H]`` unless ``save``).
    """
    T, B, _ = x_proj.shape
    H = w_hh.shape[1]
    dev, dtype = x_proj.device, w_hh.dtype
    h_buf = torch.empty(T + 1, B, H, device=dev, dtype=dtype)
    h_buf[0] = h0
    counters = _counters(launch, B, H, dev)
    grid = launch.grid(B, H)
    meta = launch.meta(H)
    f32 = dict(device=dev, dtype=torch.float32)
    c_n = c_buf = saved = None
    if cell == "lstm":
        c_buf = torch.empty(T + 1 if save else 1, B, H, **f32)
        c_buf[0] = c0
        c_n = torch.empty(B, H, **f32)
        saved = torch.empty(T, B, 4 * H, **f32) if save else c_buf  # an unused pointer when not saving
        lstm_forward_kernel[grid](x_proj, w_hh, h_buf, c_buf, c_n, saved, counters, T, B, SAVE=save, **meta)
    elif cell == "gru":
        saved = torch.empty(T, B, 4 * H, **f32) if save else h_buf
        gru_forward_kernel[grid](x_proj, w_hh, b_hn, h_buf, saved, counters, T, B, SAVE=save, **meta)
    else:
        saved = torch.empty(T, B, H, **f32) if save else h_buf
        rnn_forward_kernel[grid](x_proj, w_hh, h_buf, saved, counters, T, B, RELU=cell == "rnn_relu",
                                 SAVE=save, **meta)
    return h_buf, c_n, (saved if save else None), c_buf


def recurrence_backward(cell: str, d_out, d_h_n, d_c_n, saved, c_buf, h_buf, w_hh, launch: _Launch):
    """Run the backward kernel. ``d_out [T, B, H]``, ``d_h_n``/``d_c_n`` fp32 ``[B, H]``.

    Returns ``(d_gates_x, d_gates_h, d_h0, d_c0)``: gradients of the input-side and recurrent
    pre-activations ``[T, B, G*H]`` (the same tensor except for the GRU), fp32 ``d_h0``, ``d_c0``.
    """
    T, B, H = d_out.shape
    dev, dtype = d_out.device, w_hh.dtype
    counters = _counters(launch, B, H, dev)
    grid = launch.grid(B, H)
    meta = launch.meta(H)
    d_h0 = torch.empty(B, H, device=dev, dtype=torch.float32)
    d_c0 = None
    if cell == "lstm":
        d_gates = torch.empty(T, B, 4 * H, device=dev, dtype=dtype)
        d_c0 = torch.empty_like(d_h0)
        lstm_backward_kernel[grid](d_out, d_h_n, d_c_n, saved, c_buf, w_hh, d_gates, d_h0, d_c0, counters,
                                   T, B, **meta)
        return d_gates, d_gates, d_h0, d_c0
    if cell == "gru":
        d_gates_h = torch.empty(T, B, 3 * H, device=dev, dtype=dtype)
        d_n_x = torch.empty(T, B, H, device=dev, dtype=dtype)
        gru_backward_kernel[grid](d_out, d_h_n, saved, h_buf, w_hh, d_gates_h, d_n_x, d_h0, counters,
                                  T, B, **meta)
        return torch.cat([d_gates_h[..., : 2 * H], d_n_x], dim=-1), d_gates_h, d_h0, None
    d_pre = torch.empty(T, B, H, device=dev, dtype=dtype)
    rnn_backward_kernel[grid](d_out, d_h_n, saved, w_hh, d_pre, d_h0, counters, T, B,
                              RELU=cell == "rnn_relu", **meta)
    return d_pre, d_pre, d_h0, None


def _f32_or_zeros(t, like):
    return torch.zeros_like(like, dtype=torch.float32) if t is None else t.float().contiguous()


class RecurrentLayer(torch.autograd.Function):
    """Autograd wrapper of one layer, one direction. See :func:`recurrent_layer`."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, save):
        T, B, _ = x.shape
        H = w_hh.shape[1]
        x_proj = _input_projection(cell, x, w_ih, b_ih, b_hh, H).contiguous()
        b_hn = None
        if cell == "gru":
            b_hn = b_hh[2 * H:].contiguous() if b_hh is not None else torch.zeros(H, device=x.device, dtype=x.dtype)
        h_buf, c_n, saved, c_buf = recurrence_forward(cell, x_proj, w_hh, b_hn, h0.contiguous(),
                                                      None if c0 is None else c0.contiguous(), launch, save)
        if save:
            ctx.save_for_backward(x, w_ih, w_hh, h_buf, saved, c_buf)
        ctx.cell, ctx.launch, ctx.has_bias = cell, launch, b_ih is not None
        h_n = h_buf[T].clone()
        return h_buf[1:], h_n, (c_n.to(x.dtype) if c_n is not None else None)

    @staticmethod
    def backward(ctx, d_out, d_h_n, d_c_n):
        with torch.autocast(ctx.saved_tensors[0].device.type, enabled=False):  # grads in the weights' dtype
            return RecurrentLayer._backward(ctx, d_out, d_h_n, d_c_n)

    @staticmethod
    def _backward(ctx, d_out, d_h_n, d_c_n):
        x, w_ih, w_hh, h_buf, saved, c_buf = ctx.saved_tensors
        T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
        d_out = torch.zeros(T, B, H, device=x.device, dtype=x.dtype) if d_out is None else d_out.contiguous()
        d_h_n = _f32_or_zeros(d_h_n, h_buf[0])
        d_c_n = _f32_or_zeros(d_c_n, h_buf[0]) if ctx.cell == "lstm" else None
        d_gx, d_gh, d_h0, d_c0 = recurrence_backward(ctx.cell, d_out, d_h_n, d_c_n, saved, c_buf, h_buf, w_hh,
                                                     ctx.launch)
        need = ctx.needs_input_grad
        flat_gx, flat_gh = d_gx.reshape(T * B, -1), d_gh.reshape(T * B, -1)
        dx = (flat_gx @ w_ih).view(T, B, -1) if need[0] else None
        dw_ih = flat_gx.t() @ x.reshape(T * B, -1) if need[3] else None
        dw_hh = flat_gh.t() @ h_buf[:T].reshape(T * B, H) if need[4] else None
        db_ih = flat_gx.sum(0, dtype=torch.float32).to(x.dtype) if ctx.has_bias and need[5] else None
        db_hh = flat_gh.sum(0, dtype=torch.float32).to(x.dtype) if ctx.has_bias and need[6] else None
        dh0 = d_h0.to(x.dtype) if need[1] else None
        dc0 = d_c0.to(x.dtype) if d_c0 is not None and need[2] else None
        return dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh, None, None, None


def recurrent_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
    """One layer, one direction, forward in time, on the Triton kernels; differentiable.

    Args:
        cell: ``lstm``, ``gru``, ``rnn_tanh`` or ``rnn_relu``.
        x: ``[T, B, I]``. h0, c0: ``[B, H]`` (``c0`` LSTM only, else None).
        w_ih ``[G*H, I]``, w_hh ``[G*H, H]``, b_ih/b_hh ``[G*H]`` or None: torch.nn layout and
        gate order (i, f, g, o; r, z, n). All tensors on one device, in one dtype.

    Returns:
        ``(output [T, B, H], h_n [B, H], c_n [B, H] or None)``.

    Raises:
        ValueError: the kernels refuse this call (see :func:`refusal`).
    """
    T, B, _ = x.shape
    H = w_hh.shape[1]
    reason = refusal(cell, B, H, x.dtype, x.device)
    if reason:
        raise ValueError(f"the Triton {cell} kernels cannot run this call: {reason}")
    if T < 1:
        raise ValueError("seq_len must be at least 1")
    launch = _Launch(plan(cell, B, H, x.dtype, x.device), dot_precision(x.dtype), upcast_dot(x.dtype))
    tensors = (x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    save = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
    with torch.autocast(x.device.type, enabled=False):  # every matmul in the weights' dtype
        return RecurrentLayer.apply(x, h0, c0, w_ih.contiguous(), w_hh.contiguous(), b_ih, b_hh, cell, launch, save)
