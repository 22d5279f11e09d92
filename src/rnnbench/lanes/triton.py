"""Lane ``triton``: rnnbench's own fused recurrent kernels (``rnnbench.ops``) through the drop-in
modules of :mod:`rnnbench.nn`, forced onto the kernels (``backend="triton"``): a call the kernels
refuse becomes an error row, never a silent PyTorch run.

One kernel launch per layer and direction runs every time step (programs own slices of the hidden
units, keep their recurrent weights on chip and meet at a grid-wide barrier each step; up to
hidden 128 the RNN, and the LSTM's and GRU's forward, run a program per batch row on FMA units
instead, no barrier); the input projection
and the weight gradients are large matmuls outside. See ``docs/kernels.md``.

Devices: CUDA; also the CPU when ``TRITON_INTERPRET=1`` is set (Triton's interpreter, slow, for
tests). Parameters carry torch.nn's names, so canonical weights load as they are. A
variable-length batch goes in padded with its lengths (``module(x, hx, lengths)``), not packed:
the kernels run every sequence to the longest one's end, each keeping its state past its own
(docs/kernels.md, "Variable lengths"); no packing is needed, and torch's packing copies step by
step, which at the ``varlen`` suite's 200 steps cost more than our whole training step.

Lane ``triton-graph``: the same modules with the whole step captured once in a CUDA graph and
replayed, as ``torch-nn-graph`` does for cuDNN; it shows what the host's work per call costs our
kernels (0.10-0.27 ms per eager forward on the H100's host: docs/kernels.md, "Host time per
call"). The kernels can be captured: their barrier counters come back to zero at the end of
every launch, and the first use on the capture stream allocates and zeroes them inside the graph.
"""

from __future__ import annotations

import os

from torch import nn

from .registry import Lane, register


def build_triton(cell: str, input_size: int, hidden_size: int, num_layers: int) -> nn.Module:
    """rnnbench.nn.LSTM / GRU / RNN with ``backend="triton"`` (input ``[T, B, I]``)."""
    from .. import nn as rnn  # imports no Triton until the first call

    if cell == "lstm":
        return rnn.LSTM(input_size, hidden_size, num_layers, backend="triton")
    if cell == "gru":
        return rnn.GRU(input_size, hidden_size, num_layers, backend="triton")
    return rnn.RNN(input_size, hidden_size, num_layers, nonlinearity=cell.removeprefix("rnn_"), backend="triton")


def make_lane() -> Lane:
    """The lane as the environment allows now (CPU only under ``TRITON_INTERPRET=1``)."""
    devices = ("cuda", "cpu") if os.environ.get("TRITON_INTERPRET") == "1" else ("cuda",)
    return Lane(
        "triton",
        "rnnbench.nn on our Triton kernels: one launch per layer and direction for all steps",
        build_triton,
        devices=devices,
        requires=("triton",),
        lengths="masked",  # the padded batch and its lengths (module(x, hx, lengths)): no packing at all
    )


def make_graph_lane() -> Lane:
    """``triton-graph``: CUDA only (a CUDA graph)."""
    return Lane(
        "triton-graph",
        "rnnbench.nn on our Triton kernels, the step captured once in a CUDA graph and replayed",
        build_triton,
        devices=("cuda",),
        requires=("triton",),
        cuda_graph=True,
        lengths="masked",  # as the eager lane; the lengths are pinned, so their copy is captured too
    )


register(make_lane())
register(make_graph_lane())
