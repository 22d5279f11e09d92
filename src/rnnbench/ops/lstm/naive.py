"""The LSTM layer a reader can check by eye: one layer, one direction, straight from
:mod:`rnnbench.reference` (gate order i, f, g, o). The kernels beside this file must compute it."""

from __future__ import annotations

from ...reference import reference_forward
from ..naive import layer_weights


def lstm_naive(x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, lengths=None, mask=None, layer_norm=None):
    """``x [T, B, I]``, ``h0``/``c0`` ``[B, H]``, torch.nn-layout weights (biases may be None),
    ``lengths [B]`` or None (a variable-length batch), ``mask [B, H]`` or None (recurrent
    dropout), ``layer_norm`` a ``LayerNormWeights`` or None, as ``reference_forward`` takes them.
    Returns ``(output [T, B, H], h_n [B, H], c_n [B, H])``; differentiable, any float dtype."""
    out, (h_n, c_n) = reference_forward("lstm", layer_weights(w_ih, w_hh, b_ih, b_hh), x, (h0[None], c0[None]), 1,
                                        lengths, None if mask is None else [mask], [layer_norm])
    return out, h_n[0], c_n[0]
