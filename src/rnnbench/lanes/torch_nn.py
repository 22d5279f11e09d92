"""PyTorch's own recurrent layers: cuDNN on CUDA, ATen/oneDNN kernels on the CPU.

``torch-nn-graph`` is the same module with the whole step captured once in a CUDA graph and
replayed, which removes the per-call launch overhead and shows what that overhead costs.

On a variable-length batch ``torch-nn`` takes it packed (``pack_padded_sequence``, the documented
way, and the only one that gives each sequence's own final state); ``torch-nn-padded`` runs the
padded batch as if every sequence were full length, the wasted work many users pay.
"""

from __future__ import annotations

from torch import nn

from .registry import Lane, register


def build_torch_nn(cell: str, input_size: int, hidden_size: int, num_layers: int) -> nn.Module:
    """torch.nn.LSTM / GRU / RNN with ``batch_first=False`` (input ``[T, B, I]``)."""
    if cell == "lstm":
        return nn.LSTM(input_size, hidden_size, num_layers)
    if cell == "gru":
        return nn.GRU(input_size, hidden_size, num_layers)
    return nn.RNN(input_size, hidden_size, num_layers, nonlinearity=cell.removeprefix("rnn_"))


register(Lane("torch-nn", "torch.nn.RNN/LSTM/GRU (cuDNN on CUDA, ATen/oneDNN on CPU); packed when lengths vary",
              build_torch_nn, lengths="packed"))
register(
    Lane(
        "torch-nn-graph",
        "torch.nn layers captured once in a CUDA graph and replayed (no launch overhead)",
        build_torch_nn,
        devices=("cuda",),
        cuda_graph=True,
    )
)
register(
    Lane(
        "torch-nn-padded",
        "torch.nn layers on a variable-length batch left padded (outputs only: no per-sequence final states)",
        build_torch_nn,
        lengths="padded",
        variable_lengths_only=True,
    )
)
