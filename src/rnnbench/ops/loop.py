"""A layer as a loop of torch's own cell functions, a few launches a step: PyTorch's path where
cuDNN cannot go, as a user writes it (``torch.nn.LSTMCell`` in a loop). Keras' LSTM and GRU leave
cuDNN for such a loop the same way when asked for ``recurrent_dropout``. ``rnnbench.nn`` runs it
for recurrent dropout where its kernels do not take the call (CPU tensors without the interpreter,
``backend="torch"``, Triton not installed, a plan refused), and for layer normalization where
they do not (with recurrent dropout, on CPU tensors; the gates written out around
``torch.nn.functional.layer_norm``).
Nothing here imports Triton."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from ..reference import LAYER_NORM_EPS, LayerNormWeights


def loop_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, mask=None,
               layer_norm: LayerNormWeights | None = None):
    """One layer, one direction, forward in time: ``(output [T, B, H], h_n [1, B, H], c_n [1, B,
    H] or None)``, the contract of ``rnnbench.ops.recurrence.run_layer``.

    ``x [T, B, I]``; ``h0``/``c0`` ``[B, H]`` or ``[1, B, H]``, or None for zeros (``c0`` the
    LSTM's only); torch.nn-layout weights, biases None or both given; ``lengths`` None or ``[B]``
    int32 on ``x``'s device (:func:`kernel_lengths`: past its end a sequence keeps its state and
    outputs zeros); ``mask [B, H]`` or None: recurrent dropout, ``h_{t-1}`` times it where the
    recurrent product reads it (``rnnbench.reference.reference_forward``'s ``recurrent_masks``);
    ``layer_norm``: the layer's gains, or None (``reference_forward``'s ``layer_norms``; the input's
    product normalized for every step at once, the recurrent one and the LSTM's cell at each).
    The LSTM and the RNN through ``torch.lstm_cell`` / ``torch.rnn_tanh_cell`` /
    ``torch.rnn_relu_cell`` (h enters them only through the product); the GRU's gates written out,
    since ``torch.gru_cell`` reads one h for both its product and ``z * h``; every cell's written out
    under layer norm, where the products are normalized apart. Returns ``x``'s dtype (under
    autocast, ``layer_norm`` gives fp32)."""
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    zeros = x.new_zeros(batch, hidden)
    h = zeros if h0 is None else h0.reshape(batch, hidden)
    c = (zeros if c0 is None else c0.reshape(batch, hidden)) if cell == "lstm" else None
    x_parts = None if layer_norm is None else _normed(F.linear(x, w_ih), layer_norm.ih, b_ih)
    outputs = []
    for t in range(steps):
        h_rec = h if mask is None else h * mask
        if x_parts is not None:
            h_new, c_new = _normed_step(cell, x_parts[t], h, c, h_rec, w_hh, b_hh, layer_norm)
        elif cell == "lstm":
            h_new, c_new = torch.lstm_cell(x[t], (h_rec, c), w_ih, w_hh, b_ih, b_hh)
        elif cell == "gru":
            h_new, c_new = _gru_step(x[t], h, h_rec, w_ih, w_hh, b_ih, b_hh), None
        else:
            step = torch.rnn_tanh_cell if cell == "rnn_tanh" else torch.rnn_relu_cell
            h_new, c_new = step(x[t], h_rec, w_ih, w_hh, b_ih, b_hh), None
        if lengths is None:
            h, c, out = h_new, c_new, h_new
        else:  # a finished sequence keeps its state and outputs zeros
            running = (t < lengths).unsqueeze(1)
            h = torch.where(running, h_new, h)
            c = torch.where(running, c_new, c) if c is not None else None
            out = torch.where(running, h, 0.0)
        outputs.append(out)
    dtype = x.dtype
    return (torch.stack(outputs).to(dtype), h.unsqueeze(0).to(dtype),
            None if c is None else c.unsqueeze(0).to(dtype))


def _gru_step(x, h, h_rec, w_ih, w_hh, b_ih, b_hh):
    """The GRU's step (torch.nn's equations, reset gate after the product) with the product on
    ``h_rec`` and the update on ``h``."""
    return _gru_update(F.linear(x, w_ih, b_ih), F.linear(h_rec, w_hh, b_hh), h)


def _gru_update(x_part, h_part, h):
    """The GRU's new h from its two products with their biases, ``[B, 3H]`` each (gates r, z, n)."""
    x_r, x_z, x_n = x_part.chunk(3, dim=1)
    h_r, h_z, h_n = h_part.chunk(3, dim=1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def _normed(v, weight, bias):
    """``v [..., N]`` layer-normalized over its last dimension, times ``weight`` plus ``bias`` (None: none)."""
    return F.layer_norm(v, v.shape[-1:], weight, bias, LAYER_NORM_EPS)


def _normed_step(cell: str, x_part, h, c, h_rec, w_hh, b_hh, norm: LayerNormWeights):
    """One step under layer norm from ``x_part`` (the input's product normalized, with its bias):
    ``(h_t, c_t or None)``, the product on ``h_rec`` and the GRU's update on ``h``."""
    h_part = _normed(F.linear(h_rec, w_hh), norm.hh, b_hh)
    if cell == "gru":
        return _gru_update(x_part, h_part, h), None
    pre = x_part + h_part
    if cell == "lstm":
        i, f, g, o = pre.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(_normed(c, norm.c_weight, norm.c_bias)), c
    return (torch.tanh(pre) if cell == "rnn_tanh" else torch.relu(pre)), None


def kernel_lengths(lengths, seq_len: int, batch_size: int, device: torch.device):
    """``lengths`` (``[B]`` integers, any device) as the kernels and :func:`loop_layer` take them:
    int32 on ``device``;
    None when there are none or every sequence is ``seq_len`` long (the kernels without lengths,
    which compute the same).

    Raises:
        ValueError: not ``[batch_size]`` integers from 0 to ``seq_len``.
    """
    if lengths is None:
        return None
    if lengths.shape != (batch_size,) or lengths.is_floating_point() or lengths.is_complex():
        raise ValueError(f"lengths must be {batch_size} integers (one per sequence), got {lengths.dtype} "
                         f"of shape {tuple(lengths.shape)}")
    low, high = int(lengths.min()), int(lengths.max())
    if low < 0 or high > seq_len:
        raise ValueError(f"lengths must be from 0 to seq_len ({seq_len}); got {low} to {high}")
    if low == seq_len:
        return None
    # non_blocking: no wait for the stream's queued work (a host tensor's copy is staged at once).
    # A pinned int32 tensor is copied as it is, which a CUDA graph can capture.
    return lengths.to(dtype=torch.int32).contiguous().to(device, non_blocking=True)
