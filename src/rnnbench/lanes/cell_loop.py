"""A Python loop over time calling torch.nn's cell modules once per step and layer.

This is how per-step cells are used in practice (TensorFlow's BasicLSTMCell under
``static_rnn``/``MultiRNNCell``, Element-Research's ``nn.LSTM`` in Torch7): every step launches
the input matmul, the recurrent matmul and the element-wise gate work separately.
"""

from __future__ import annotations

import torch
from torch import nn

from .masking import keep_finished, running_masks, zero_finished
from .registry import Lane, register


class CellLoop(nn.Module):
    """Stacked ``nn.LSTMCell``/``GRUCell``/``RNNCell``, time outer and layers inner.

    Same call as torch.nn.LSTM/GRU/RNN: ``forward(x [T, B, I], hx) -> (output [T, B, H], h_n)``,
    and ``lengths`` ``[B]`` for a variable-length batch (a finished sequence keeps its state and
    outputs zeros, see :func:`rnnbench.lanes.masking.keep_finished`).
    """

    def __init__(self, cell: str, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.cell = cell
        sizes = [input_size] + [hidden_size] * (num_layers - 1)
        if cell == "lstm":
            self.cells = nn.ModuleList(nn.LSTMCell(i, hidden_size) for i in sizes)
        elif cell == "gru":
            self.cells = nn.ModuleList(nn.GRUCell(i, hidden_size) for i in sizes)
        else:
            act = cell.removeprefix("rnn_")
            self.cells = nn.ModuleList(nn.RNNCell(i, hidden_size, nonlinearity=act) for i in sizes)

    def forward(self, x: torch.Tensor, hx, lengths: torch.Tensor | None = None):
        lstm = self.cell == "lstm"
        states = [(hx[0][k], hx[1][k]) if lstm else hx[k] for k in range(len(self.cells))]
        running = running_masks(lengths, x.shape[0], x.device)
        outputs = []
        for t in range(x.shape[0]):
            layer_input = x[t]
            for k, cell in enumerate(self.cells):
                states[k] = keep_finished(cell(layer_input, states[k]), states[k], running[t])
                layer_input = states[k][0] if lstm else states[k]
            outputs.append(zero_finished(layer_input, running[t]))
        output = torch.stack(outputs)
        if lstm:
            return output, (torch.stack([s[0] for s in states]), torch.stack([s[1] for s in states]))
        return output, torch.stack(states)


def load_cells(module: CellLoop, weights: dict[str, torch.Tensor]) -> None:
    """Canonical ``weight_ih_l{k}`` etc. into ``cells[k].weight_ih`` etc."""
    renamed = {}
    for name, tensor in weights.items():
        base, layer = name.rsplit("_l", 1)
        renamed[f"cells.{layer}.{base}"] = tensor
    module.load_state_dict(renamed, strict=True)


def canonical_name(name: str) -> str:
    """``cells.{k}.weight_ih`` -> ``weight_ih_l{k}``."""
    _, layer, base = name.split(".")
    return f"{base}_l{layer}"


register(
    Lane(
        "torch-cell-loop",
        "nn.LSTMCell/GRUCell/RNNCell called once per step in Python (like BasicLSTMCell)",
        CellLoop,
        load=load_cells,
        canonical_name=canonical_name,
        lengths="masked",
    )
)
