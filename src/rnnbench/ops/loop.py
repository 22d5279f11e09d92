"""A layer as a loop of torch's own cell functions, a few launches a step: PyTorch's path where
cuDNN cannot go, as a user writes it (``torch.nn.LSTMCell`` in a loop). Keras' LSTM and GRU leave
cuDNN for such a loop the same way when asked for ``recurrent_dropout``. ``rnnbench.nn`` runs it
for recurrent dropout where its kernels do not take the call (CPU tensors without the interpreter,
``backend="torch"``, Triton not installed, a plan refused). Nothing here imports Triton."""

from __future__ import annotations

import torch
from torch.nn import functional as F


def loop_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, mask=None):
    """One layer, one direction, forward in time: ``(output [T, B, H], h_n [1, B, H], c_n [1, B,
    H] or None)``, the contract of ``rnnbench.ops.recurrence.run_layer``.

    ``x [T, B, I]``; ``h0``/``c0`` ``[B, H]`` or ``[1, B, H]``, or None for zeros (``c0`` the
    LSTM's only); torch.nn-layout weights, biases None or both given; ``lengths`` None or ``[B]``
    int32 on ``x``'s device (:func:`kernel_lengths`: past its end a sequence keeps its state and
    outputs zeros); ``mask [B, H]`` or None: recurrent dropout, ``h_{t-1}`` times it where the
    recurrent product reads it (``rnnbench.reference.reference_forward``'s ``recurrent_masks``).
    The LSTM and the RNN through ``torch.lstm_cell`` / ``torch.rnn_tanh_cell`` /
    ``torch.rnn_relu_cell`` (h enters them only through the product); the GRU's gates written out,
    since ``torch.gru_cell`` reads one h for both its product and ``z * h``."""
    steps, batch = x.shape[:2]
    hidden = w_hh.shape[1]
    zeros = x.new_zeros(batch, hidden)
    h = zeros if h0 is None else h0.reshape(batch, hidden)
    c = (zeros if c0 is None else c0.reshape(batch, hidden)) if cell == "lstm" else None
    outputs = []
    for t in range(steps):
        h_rec = h if mask is None else h * mask
        if cell == "lstm":
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
    return torch.stack(outputs), h.unsqueeze(0), None if c is None else c.unsqueeze(0)


def _gru_step(x, h, h_rec, w_ih, w_hh, b_ih, b_hh):
    """The GRU's step (torch.nn's equations, reset gate after the product) with the product on
    ``h_rec`` and the update on ``h``."""
    x_r, x_z, x_n = F.linear(x, w_ih, b_ih).chunk(3, dim=1)
    h_r, h_z, h_n = F.linear(h_rec, w_hh, b_hh).chunk(3, dim=1)
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


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
