"""A layer-normalized layer's training on our kernels: the LSTM's forward that saves, its backward.

Ba, Kiros and Hinton's layer-normalized LSTM ("Layer Normalization", 2016; haste's
``LayerNormLSTM``; ``rnnbench.reference.LayerNormWeights`` is the readable reference): each step's
``x W_ih^T`` and ``h W_hh^T`` normalized over their ``4H`` values apart, times their gains, plus
``b_ih``, ``b_hh``; ``c_t`` normalized where it enters ``tanh``. Every norm of the forward is in the
recurrence's kernel (``ops/lstm/kernels.py``, ``LN``), which, saving, keeps the normalized recurrent
product and its ``1/σ`` for the backward. The backward kernel runs the cell's norm and the recurrent
product's backward in each reverse step, on chip (``dh_{t-1}`` is formed from the gradient before
that norm); what is left is outside the recurrence, for every step at once, here: the input's norm
backward (its normalized values recomputed from the projection the forward kept), the gains' and
biases' sums, and the weight and input gradients (``gradients.layer_gradients``).

On a plan that holds every unit of a batch row in one program (``recurrence.LAYER_NORM_PLAN``,
forward and backward): an H200 takes the LSTM to hidden 64 in fp32, 128 in 16-bit.
"""

from __future__ import annotations

import torch

from ..reference import LAYER_NORM_EPS
from .gradients import layer_gradients
from .projection import input_projection
from .recurrence import _contiguous, recurrence_backward, recurrence_forward


def _row_normalized(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``v [..., N]`` normalized over its last axis in fp32 and ``1/σ`` ``[..., 1]`` (biased
    variance, :data:`~rnnbench.reference.LAYER_NORM_EPS`): the forward kernel's input norm again."""
    v = v.float()
    centred = v - v.mean(-1, keepdim=True)
    rstd = torch.rsqrt(centred.square().mean(-1, keepdim=True) + LAYER_NORM_EPS)
    return centred * rstd, rstd


def norm_backward(d_hat: torch.Tensor, hat: torch.Tensor, rstd: torch.Tensor) -> torch.Tensor:
    """Layer norm's backward over the last axis: the gradient reaching the values before the norm
    from ``d_hat`` (reaching the normalized ``hat``, gains applied), ``rstd * (d - mean(d) - x̂
    mean(d x̂))`` (the derivative of ``rnnbench.reference.normalized``); the kernels' ``_norm_back``."""
    return rstd * (d_hat - d_hat.mean(-1, keepdim=True) - hat * (d_hat * hat).mean(-1, keepdim=True))


class LayerNormLayer(torch.autograd.Function):
    """One layer-normalized LSTM layer, one direction, with gradients:
    ``LayerNormLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, launch, lengths)``
    returns ``(output [T, B, H], h_n [1, B, H], c_n [1, B, H])``, as ``recurrence.RecurrentLayer``.
    ``x [T, B, I]``; ``h0``, ``c0`` ``[B, H]`` or ``[1, B, H]`` or None; biases None or ``[4H]``;
    gains ``[4H]``, ``[4H]``, ``[H]``, ``[H]`` (``ln_c_b`` the cell norm's shift); every tensor
    contiguous, in one dtype on one CUDA device (or the CPU under ``TRITON_INTERPRET=1``);
    ``launch`` a ``recurrence.layer_norm_launch_or_refusal(..., trains=True)``'s; ``lengths`` as
    ``recurrence.run_layer`` takes them. Every input gets its gradient."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, launch, lengths):
        T, B = x.shape[0], x.shape[1]
        f32 = dict(device=x.device, dtype=torch.float32)
        x_proj = input_projection(x, w_ih, launch.precision, launch.upcast)
        ln_hat, ln_rstd = torch.empty(T, B, w_hh.shape[0], **f32), torch.empty(T, B, **f32)
        h_buf, h_n, c_n, saved, c_buf = recurrence_forward("lstm", x_proj, w_hh, b_ih, b_hh, h0, c0, launch, True,
                                                           lengths, norm=(ln_ih, ln_hh, ln_c_w, ln_c_b, ln_hat,
                                                                          ln_rstd))
        ctx.save_for_backward(x, x_proj, w_ih, w_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, h_buf, saved, c_buf, ln_hat,
                              ln_rstd)
        ctx.launch, ctx.lengths, ctx.has_bias = launch, lengths, b_ih is not None
        ctx.h0_shape = None if h0 is None else h0.shape
        ctx.c0_shape = None if c0 is None else c0.shape
        ctx.set_materialize_grads(False)  # (absent output gradients arrive as None: zeros in the kernel)
        return h_buf[1:], h_n, c_n

    @staticmethod
    def backward(ctx, d_out, d_h_n, d_c_n):
        x, x_proj, w_ih, w_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, h_buf, saved, c_buf, ln_hat, ln_rstd = ctx.saved_tensors
        T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
        ln_sums = torch.empty(2, B, H, device=x.device, dtype=torch.float32)
        d_gates, d_raw, d_h0, d_c0 = recurrence_backward(
            "lstm", _contiguous(d_out), _contiguous(d_h_n), _contiguous(d_c_n), saved, c_buf, h_buf, w_hh, ctx.launch,
            ctx.lengths, None, (ln_hat, ln_rstd, ln_hh, ln_c_w, ln_c_b, ln_sums))
        # d_gates: the gates' pre-activations' gradient, which the biases and the gains take as it is
        d_a = d_gates.float()
        x_hat, x_rstd = _row_normalized(x_proj)
        d_proj = norm_backward(d_a * ln_ih.float(), x_hat, x_rstd).to(w_ih.dtype)
        need = ctx.needs_input_grad
        grads = layer_gradients(d_proj.view(T * B, -1), d_raw.view(T * B, -1), x.reshape(T * B, -1),
                                h_buf[:T].view(T * B, H), w_ih, (need[0], need[3], need[4], False, False),
                                ctx.launch.precision, ctx.launch.upcast)
        d_bias = d_a.sum((0, 1)).to(w_ih.dtype) if ctx.has_bias else None
        dtype = ln_ih.dtype
        return (grads.dx.view(T, B, -1) if need[0] else None,
                d_h0.view(ctx.h0_shape) if need[1] else None,
                d_c0.view(ctx.c0_shape) if need[2] else None,
                grads.dw_ih, grads.dw_hh, d_bias, d_bias,
                (d_a * x_hat).sum((0, 1)).to(dtype), (d_a * ln_hat).sum((0, 1)).to(dtype),
                ln_sums[0].sum(0).to(dtype), ln_sums[1].sum(0).to(dtype), None, None)
