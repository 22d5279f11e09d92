"""PyTorch's own recurrent layers: cuDNN on CUDA, ATen/oneDNN kernels on the CPU.

``torch-nn-graph`` is the same module with the whole step captured once in a CUDA graph and
replayed, which removes the per-call launch overhead and shows what that overhead costs.
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


register(Lane("torch-nn", "torch.nn.RNN/LSTM/GRU (cuDNN on CUDA, ATen/oneDNN on CPU)", build_torch_nn))
register(
    Lane(
        "torch-nn-graph",
        "torch.nn layers captured once in a CUDA graph and replayed (no launch overhead)",
        build_torch_nn,
        devices=("cuda",),
        cuda_graph=True,
    )
)
