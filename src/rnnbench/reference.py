"""Canonical weights and the readable reference every lane is checked against.

Canonical weights are one weight set per case in torch.nn layout: ``weight_ih_l{k}``
``[G*H, I_k]``, ``weight_hh_l{k}`` ``[G*H, H]``, ``bias_ih_l{k}`` and ``bias_hh_l{k}`` ``[G*H]``,
gates stacked in the order of :data:`rnnbench.cases.GATES` (i, f, g, o for LSTM; r, z, n for GRU).
Every lane converts from this set, so every lane computes the same function.

The reference below is written for reading, not speed: one step, one layer at a time, the gate
equations as in the torch.nn documentation (which follow cuDNN: the GRU's reset gate multiplies
the recurrent term *after* the matmul, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``).
"""

from __future__ import annotations

import math

import torch

from .cases import Case


def canonical_weights(case: Case, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A float32 CPU weight set for ``case``, drawn as torch.nn initialises it:
    uniform(-1/sqrt(H), 1/sqrt(H)) for every matrix and bias."""
    g, h = case.num_gates, case.hidden_size
    bound = 1.0 / math.sqrt(h)
    weights = {}
    for k in range(case.num_layers):
        in_size = case.input_size if k == 0 else h
        shapes = {f"weight_ih_l{k}": (g * h, in_size), f"weight_hh_l{k}": (g * h, h),
                  f"bias_ih_l{k}": (g * h,), f"bias_hh_l{k}": (g * h,)}
        for name, shape in shapes.items():
            weights[name] = (torch.rand(shape, generator=generator) * 2 - 1) * bound
    return weights


def _product(h: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
    return h @ w_hh.T


def cell_step(cell: str, x: torch.Tensor, state, w_ih, w_hh, b_ih, b_hh, recurrent=_product):
    """One step of one layer. ``x`` is ``[B, I]``; ``state`` is ``h`` ``[B, H]``, or ``(h, c)``
    for LSTM. Returns the new state in the same form. ``recurrent(h, w_hh)`` is the recurrent
    product ``h W_hh^T`` (replaceable, to study its rounding: benchmarks/tf32_backward_error.py)."""
    if cell == "lstm":
        h, c = state
        gates = x @ w_ih.T + b_ih + recurrent(h, w_hh) + b_hh
        i, f, g, o = gates.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    if cell == "gru":
        h = state
        x_r, x_z, x_n = (x @ w_ih.T + b_ih).chunk(3, dim=1)
        h_r, h_z, h_n = (recurrent(h, w_hh) + b_hh).chunk(3, dim=1)
        r = torch.sigmoid(x_r + h_r)
        z = torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return (1 - z) * n + z * h
    pre = x @ w_ih.T + b_ih + recurrent(state, w_hh) + b_hh
    return torch.tanh(pre) if cell == "rnn_tanh" else torch.relu(pre)


def reference_forward(cell: str, weights: dict[str, torch.Tensor], x: torch.Tensor, h0, num_layers: int,
                      lengths: torch.Tensor | None = None, recurrent_masks=None):
    """Run the stacked network over ``x`` ``[T, B, I]`` from ``h0`` ``[L, B, H]`` (a pair
    ``(h0, c0)`` for LSTM). Returns ``(output [T, B, H], h_n)`` with ``h_n`` like ``h0``, as
    torch.nn.LSTM/GRU/RNN do.

    With ``lengths`` ``[B]``, sequence ``b`` ends after ``lengths[b]`` steps: past its end its
    state stays as it was and its output is zero, so ``h_n`` is the state at its own last step
    (what ``pack_padded_sequence`` gives torch.nn, and what running it alone would give).

    ``recurrent_masks``: recurrent dropout, a mask ``[B, H]`` per layer (or None for a layer
    without): the layer's ``h_{t-1}`` enters the recurrent product times its mask at every step,
    including the first, while the output, the GRU's ``z * h_{t-1}`` and ``h_n`` take ``h`` itself
    (Gal and Ghahramani, "A Theoretically Grounded Application of Dropout in Recurrent Neural
    Networks", 2016: one mask for every step; Keras' ``recurrent_dropout``)."""
    layer_input = x
    finals = []
    for k in range(num_layers):
        w = [weights[f"{n}_l{k}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        state = (h0[0][k], h0[1][k]) if cell == "lstm" else h0[k]
        mask = None if recurrent_masks is None else recurrent_masks[k]
        recurrent = _product if mask is None else (lambda h, w_hh, m=mask: _product(h * m, w_hh))
        outputs = []
        for t in range(layer_input.shape[0]):
            new = cell_step(cell, layer_input[t], state, *w, recurrent=recurrent)
            if lengths is not None:  # a sequence already over keeps its state; its output is 0
                running = (t < lengths).unsqueeze(1)  # [B, 1]
                new = (tuple(torch.where(running, n, s) for n, s in zip(new, state)) if cell == "lstm"
                       else torch.where(running, new, state))
            state = new
            h = state[0] if cell == "lstm" else state
            outputs.append(h if lengths is None else torch.where(running, h, 0.0))
        layer_input = torch.stack(outputs)
        finals.append(state)
    if cell == "lstm":
        return layer_input, (torch.stack([s[0] for s in finals]), torch.stack([s[1] for s in finals]))
    return layer_input, torch.stack(finals)
