"""The Elman RNN layer a reader can check by eye: one layer, one direction, straight from
:mod:`rnnbench.reference`. The kernels beside this file must compute it."""

from __future__ import annotations

from ...reference import reference_forward
from ..naive import layer_weights


def rnn_naive(x, h0, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity: str = "tanh", lengths=None, mask=None,
              layer_norm=None):
    """``x [T, B, I]``, ``h0 [B, H]``, torch.nn-layout weights (biases may be None),
    ``nonlinearity`` ``tanh`` or ``relu``, ``lengths [B]`` or None (a variable-length batch, as
    ``reference_forward``), ``mask [B, H]`` or None (recurrent dropout), ``layer_norm`` a
    ``LayerNormWeights`` or None (both as ``reference_forward``). Returns ``(output [T, B, H], h_n [B, H])``."""
    cell = {"tanh": "rnn_tanh", "relu": "rnn_relu"}[nonlinearity]
    out, h_n = reference_forward(cell, layer_weights(w_ih, w_hh, b_ih, b_hh), x, h0[None], 1, lengths,
                                 None if mask is None else [mask], [layer_norm])
    return out, h_n[0]
