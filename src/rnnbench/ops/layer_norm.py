"""A layer-normalized layer's training on our kernels: the forward that saves, the backward.

Ba, Kiros and Hinton's layer-normalized cells ("Layer Normalization", 2016; haste's
``LayerNormLSTM`` and ``LayerNormGRU``; ``rnnbench.reference.LayerNormWeights`` is the readable
reference): each step's ``x W_ih^T`` and ``h W_hh^T`` normalized over their ``G*H`` values apart,
times their gains, plus ``b_ih``, ``b_hh`` (the GRU's ``b_hn`` inside ``r * (.)``); the LSTM's
``c_t`` normalized where it enters ``tanh``. Every norm of the forward is in the recurrence's kernel
(``ops/<cell>/kernels.py``, ``LN``), which, saving, keeps the normalized recurrent product and its
``1/σ`` for the backward. The backward kernel runs the recurrent product's norm backward in each
reverse step (and the LSTM's cell norm's): ``dh_{t-1}`` is formed from the gradient before that
norm. What is left is outside the recurrence, for every step at once, here: the input's norm
backward (its normalized values recomputed from the projection the forward kept), the gains' and
biases' sums, and the weight and input gradients (``gradients.layer_gradients``).

On a plan that holds every unit of a batch row in one program (``recurrence.LAYER_NORM_PLAN``,
forward and backward: on an H200 the LSTM and GRU to hidden 64 in fp32, 128 in 16-bit, the RNN to
128 and 256), the norms' sums in the program's registers; past that on the exchange plans
(``recurrence.LAYER_NORM_EXCHANGE_PLAN``), each program's share of them gathered after a grid
barrier (``common._shared_norm_back`` in the backward).
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
    """One layer-normalized layer, one direction, with gradients:
    ``LayerNormLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, cell, launch,
    lengths)`` returns ``(output [T, B, H], h_n [1, B, H], c_n [1, B, H] or None)``, as
    ``recurrence.RecurrentLayer``. ``cell``: ``lstm``, ``gru``, ``rnn_tanh`` or ``rnn_relu``;
    ``x [T, B, I]``; ``h0``, ``c0`` ``[B, H]`` or ``[1, B, H]`` or None (``c0`` the LSTM's);
    biases None or ``[G*H]``; gains ``ln_ih``, ``ln_hh`` ``[G*H]``, the LSTM's cell norm's
    ``ln_c_w``, ``ln_c_b`` ``[H]`` (else None); every tensor contiguous, in one dtype on one CUDA
    device (or the CPU under ``TRITON_INTERPRET=1``); ``launch`` a
    ``recurrence.layer_norm_launch_or_refusal(..., trains=True)``'s; ``lengths`` as
    ``recurrence.run_layer`` takes them. Every input gets its gradient."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, cell, launch, lengths):
        T, B = x.shape[0], x.shape[1]
        f32 = dict(device=x.device, dtype=torch.float32)
        x_proj = input_projection(x, w_ih, launch.precision, launch.upcast)
        ln_hat, ln_rstd = torch.empty(T, B, w_hh.shape[0], **f32), torch.empty(T, B, **f32)
        h_buf, h_n, c_n, saved, c_buf = recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, h0, c0, launch, True,
                                                           lengths, norm=(ln_ih, ln_hh, ln_c_w, ln_c_b, ln_hat,
                                                                          ln_rstd))
        ctx.save_for_backward(x, x_proj, w_ih, w_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, h_buf, saved, c_buf, ln_hat,
                              ln_rstd)
        ctx.cell, ctx.launch, ctx.lengths, ctx.has_bias = cell, launch, lengths, b_ih is not None
        ctx.h0_shape = None if h0 is None else h0.shape
        ctx.c0_shape = None if c0 is None else c0.shape
        ctx.set_materialize_grads(False)  # (absent output gradients arrive as None: zeros in the kernel)
        return h_buf[1:], h_n, c_n

    @staticmethod
    def backward(ctx, d_out, d_h_n, d_c_n):
        x, x_proj, w_ih, w_hh, ln_ih, ln_hh, ln_c_w, ln_c_b, h_buf, saved, c_buf, ln_hat, ln_rstd = ctx.saved_tensors
        T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
        lstm = ctx.cell == "lstm"
        d_raw = torch.empty(ln_hat.shape, device=x.device, dtype=w_hh.dtype)
        ln_sums = torch.empty(2, B, H, device=x.device, dtype=torch.float32) if lstm else None
        d_gx, d_gh, d_h0, d_c0 = recurrence_backward(
            ctx.cell, _contiguous(d_out), _contiguous(d_h_n), _contiguous(d_c_n) if lstm else None, saved, c_buf,
            h_buf, w_hh, ctx.launch, ctx.lengths, None, (ln_hat, ln_rstd, ln_hh, d_raw, ln_c_w, ln_c_b, ln_sums))
        # d_gx, d_gh: the normalized products' gradients (one tensor but for the GRU, whose n differs
        # by r), which the biases and the gains take as they are
        d_x, d_h = d_gx.float(), d_gh.float()
        x_hat, x_rstd = _row_normalized(x_proj)
        d_proj = norm_backward(d_x * ln_ih.float(), x_hat, x_rstd).to(w_ih.dtype)
        need = ctx.needs_input_grad
        grads = layer_gradients(d_proj.view(T * B, -1), d_raw.view(T * B, -1), x.reshape(T * B, -1),
                                h_buf[:T].view(T * B, H), w_ih, (need[0], need[3], need[4], False, False),
                                ctx.launch.precision, ctx.launch.upcast)
        dtype = ln_ih.dtype
        db_ih, db_hh = (d_x.sum((0, 1)).to(w_ih.dtype), d_h.sum((0, 1)).to(w_ih.dtype)) if ctx.has_bias else (None,
                                                                                                           None)
        d_c_gains = (ln_sums[0].sum(0).to(dtype), ln_sums[1].sum(0).to(dtype)) if lstm else (None, None)
        return (grads.dx.view(T, B, -1) if need[0] else None,
                d_h0.view(ctx.h0_shape) if need[1] else None,
                d_c0.view(ctx.c0_shape) if lstm and need[2] else None,
                grads.dw_ih, grads.dw_hh, db_ih, db_hh,
                (d_x * x_hat).sum((0, 1)).to(dtype), (d_h * ln_hat).sum((0, 1)).to(dtype), *d_c_gains,
                None, None, None)
