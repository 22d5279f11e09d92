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
from typing import NamedTuple

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


LAYER_NORM_EPS = 1e-5  # added to the variance, as torch.nn.LayerNorm's default


class LayerNormWeights(NamedTuple):
    """One layer's (and direction's) layer-norm gains, as Ba, Kiros and Hinton's "Layer
    Normalization" (2016, section 6.1) puts them in an LSTM, and haste's ``LayerNormLSTM`` and
    ``LayerNormGRU`` (lmnt-com/haste) in the LSTM and the GRU: each of the two products, ``x W_ih^T``
    and ``h W_hh^T`` (``[B, G*H]``), normalized over its ``G*H`` pre-activations apart, times its
    gain, before its bias (``b_ih`` and ``b_hh`` are the norms' shifts); the LSTM's ``c_t`` too,
    over its ``H`` units, where it enters ``h_t = o * tanh(.)`` (the carried ``c_t`` itself is not
    normalized). ``ih``, ``hh`` ``[G*H]``; ``c_weight``, ``c_bias`` ``[H]`` (None but for the LSTM)."""

    ih: torch.Tensor
    hh: torch.Tensor
    c_weight: torch.Tensor | None = None
    c_bias: torch.Tensor | None = None


def normalized(v: torch.Tensor) -> torch.Tensor:
    """``v [B, N]`` normalized over its last dimension: zero mean, unit (biased) variance, with
    :data:`LAYER_NORM_EPS` added to the variance (torch.nn.LayerNorm's formula without its affine)."""
    mean = v.mean(dim=-1, keepdim=True)
    var = ((v - mean) ** 2).mean(dim=-1, keepdim=True)
    return (v - mean) / torch.sqrt(var + LAYER_NORM_EPS)


def _product(h: torch.Tensor, w_hh: torch.Tensor) -> torch.Tensor:
    return h @ w_hh.T


def cell_step(cell: str, x: torch.Tensor, state, w_ih, w_hh, b_ih, b_hh, recurrent=_product,
              layer_norm: LayerNormWeights | None = None):
    """One step of one layer. ``x`` is ``[B, I]``; ``state`` is ``h`` ``[B, H]``, or ``(h, c)``
    for LSTM. Returns the new state in the same form. ``recurrent(h, w_hh)`` is the recurrent
    product ``h W_hh^T`` (replaceable, to study its rounding: benchmarks/tf32_backward_error.py).
    ``layer_norm``: the layer's gains (:class:`LayerNormWeights`), or None for the plain cell."""
    h = state[0] if cell == "lstm" else state
    x_part, h_part = x @ w_ih.T, recurrent(h, w_hh)
    if layer_norm is not None:
        x_part, h_part = normalized(x_part) * layer_norm.ih, normalized(h_part) * layer_norm.hh
    x_part, h_part = x_part + b_ih, h_part + b_hh
    if cell == "lstm":
        i, f, g, o = (x_part + h_part).chunk(4, dim=1)
        c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)
        c_out = c if layer_norm is None else normalized(c) * layer_norm.c_weight + layer_norm.c_bias
        return torch.sigmoid(o) * torch.tanh(c_out), c
    if cell == "gru":
        x_r, x_z, x_n = x_part.chunk(3, dim=1)
        h_r, h_z, h_n = h_part.chunk(3, dim=1)
        r = torch.sigmoid(x_r + h_r)
        z = torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return (1 - z) * n + z * h
    pre = x_part + h_part
    return torch.tanh(pre) if cell == "rnn_tanh" else torch.relu(pre)


def reference_forward(cell: str, weights: dict[str, torch.Tensor], x: torch.Tensor, h0, num_layers: int,
                      lengths: torch.Tensor | None = None, recurrent_masks=None, layer_norms=None):
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
    Networks", 2016: one mask for every step; Keras' ``recurrent_dropout``).

    ``layer_norms``: a :class:`LayerNormWeights` per layer (or None for a layer without): the
    layer normalized as that class says, at every step."""
    layer_input = x
    finals = []
    for k in range(num_layers):
        w = [weights[f"{n}_l{k}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        state = (h0[0][k], h0[1][k]) if cell == "lstm" else h0[k]
        mask = None if recurrent_masks is None else recurrent_masks[k]
        recurrent = _product if mask is None else (lambda h, w_hh, m=mask: _product(h * m, w_hh))
        norm = None if layer_norms is None else layer_norms[k]
        outputs = []
        for t in range(layer_input.shape[0]):
            new = cell_step(cell, layer_input[t], state, *w, recurrent=recurrent, layer_norm=norm)
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
