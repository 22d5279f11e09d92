"""Readable whole networks built from the per-cell naive layers (``ops/<cell>/naive.py``), which
call :mod:`rnnbench.reference`: the judge for :mod:`rnnbench.nn` with several layers, both
directions and ``batch_first``. Nothing here is fast; everything here is differentiable."""

from __future__ import annotations

import torch

from ..reference import LayerNormWeights

LAYER_NORM_NAMES = ("ln_weight_ih", "ln_weight_hh", "ln_weight_c", "ln_bias_c")  # LayerNormWeights' fields


def layer_norm_weights(params: dict[str, torch.Tensor], suffix: str) -> LayerNormWeights | None:
    """The layer-norm gains of one layer and direction (``suffix``: ``_l{k}`` or ``_l{k}_reverse``)
    under ``rnnbench.nn``'s names (:data:`LAYER_NORM_NAMES`, the LSTM's cell norm absent in the
    others), or None where ``params`` has none."""
    if f"ln_weight_ih{suffix}" not in params:
        return None
    return LayerNormWeights(*(params.get(f"{name}{suffix}") for name in LAYER_NORM_NAMES))


def layer_weights(w_ih, w_hh, b_ih=None, b_hh=None) -> dict[str, torch.Tensor]:
    """One layer's weights under the reference's names (``*_l0``); missing biases are zeros."""
    if b_ih is None:
        b_ih = torch.zeros(w_ih.shape[0], dtype=w_ih.dtype, device=w_ih.device)
        b_hh = torch.zeros_like(b_ih)
    return {"weight_ih_l0": w_ih, "weight_hh_l0": w_hh, "bias_ih_l0": b_ih, "bias_hh_l0": b_hh}


def naive_layer(cell: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, mask=None, layer_norm=None):
    """One layer, one direction: ``(output [T, B, H], h_n [B, H], c_n [B, H] or None)``;
    ``lengths [B]`` or None (a variable-length batch), ``mask [B, H]`` or None (recurrent
    dropout), ``layer_norm`` a ``LayerNormWeights`` or None, as
    ``rnnbench.reference.reference_forward`` takes them."""
    from .gru.naive import gru_naive
    from .lstm.naive import lstm_naive
    from .rnn.naive import rnn_naive

    if cell == "lstm":
        return lstm_naive(x, h0, c0, w_ih, w_hh, b_ih, b_hh, lengths, mask, layer_norm)
    if cell == "gru":
        return (*gru_naive(x, h0, w_ih, w_hh, b_ih, b_hh, lengths, mask, layer_norm), None)
    return (*rnn_naive(x, h0, w_ih, w_hh, b_ih, b_hh, cell.removeprefix("rnn_"), lengths, mask, layer_norm), None)


def naive_network(cell: str, params: dict[str, torch.Tensor], x, hx, num_layers: int,
                  bidirectional: bool = False, batch_first: bool = False, recurrent_masks=None):
    """What ``torch.nn.LSTM/GRU/RNN`` computes (no dropout), with ``params`` under torch.nn's names
    (``weight_ih_l{k}[_reverse]`` ...; biases absent when ``bias=False``), and layer-normalized
    where ``params`` holds ``rnnbench.nn``'s layer-norm gains (``ln_weight_ih_l{k}[_reverse]`` ...,
    :func:`layer_norm_weights`).

    ``x`` is ``[T, B, I]`` (``[B, T, I]`` with ``batch_first``); ``hx`` ``[L*D, B, H]`` (a pair for
    LSTM) or None for zeros; ``recurrent_masks``: recurrent dropout's mask ``[B, H]`` per layer and
    direction (in ``hx``'s order), or None. Returns ``(output, h_n)`` shaped as torch.nn returns them.
    """
    if batch_first:
        x = x.transpose(0, 1)
    directions = 2 if bidirectional else 1
    hidden = params["weight_hh_l0"].shape[1]
    if hx is None:
        zeros = x.new_zeros(num_layers * directions, x.shape[1], hidden)
        hx = (zeros, zeros) if cell == "lstm" else zeros
    h0, c0 = hx if cell == "lstm" else (hx, None)
    finals_h, finals_c, layer_input = [], [], x
    for k in range(num_layers):
        outputs = []
        for d in range(directions):
            sfx = "_reverse" if d else ""
            w = [params.get(f"{n}_l{k}{sfx}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            idx = k * directions + d
            inp = layer_input.flip(0) if d else layer_input
            out, h_n, c_n = naive_layer(cell, inp, h0[idx], None if c0 is None else c0[idx], *w,
                                        mask=None if recurrent_masks is None else recurrent_masks[idx],
                                        layer_norm=layer_norm_weights(params, f"_l{k}{sfx}"))
            outputs.append(out.flip(0) if d else out)
            finals_h.append(h_n)
            finals_c.append(c_n)
        layer_input = torch.cat(outputs, dim=2)
    output = layer_input.transpose(0, 1) if batch_first else layer_input
    if cell == "lstm":
        return output, (torch.stack(finals_h), torch.stack(finals_c))
    return output, torch.stack(finals_h)
