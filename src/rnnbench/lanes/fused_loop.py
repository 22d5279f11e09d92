"""The seeds' "FastLSTM": the input projection of all steps hoisted into one matmul, then one
recurrent matmul per step for all gates together, the gate math in plain torch ops.

Parameters carry torch.nn's names, so canonical weights load as they are.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..cases import GATES
from .masking import keep_finished, running_masks, zero_finished
from .registry import Lane, register


class FusedLoop(nn.Module):
    """Same call as torch.nn.LSTM/GRU/RNN: ``forward(x [T, B, I], hx) -> (output, h_n)``, and
    ``lengths`` ``[B]`` for a variable-length batch (masked, as in :class:`CellLoop`)."""

    def __init__(self, cell: str, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.cell, self.num_layers = cell, num_layers
        gh = len(GATES[cell]) * hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        for k in range(num_layers):
            in_size = input_size if k == 0 else hidden_size
            for name, shape in (("weight_ih", (gh, in_size)), ("weight_hh", (gh, hidden_size)),
                                ("bias_ih", (gh,)), ("bias_hh", (gh,))):
                self.register_parameter(f"{name}_l{k}", nn.Parameter(torch.empty(shape).uniform_(-bound, bound)))

    def forward(self, x: torch.Tensor, hx, lengths: torch.Tensor | None = None):
        lstm = self.cell == "lstm"
        running = running_masks(lengths, x.shape[0], x.device)
        layer_input, finals = x, []
        for k in range(self.num_layers):
            w_hh, b_hh = getattr(self, f"weight_hh_l{k}"), getattr(self, f"bias_hh_l{k}")
            # One [T*B, I] x [I, G*H] matmul for every step's input projection.
            x_proj = torch.addmm(getattr(self, f"bias_ih_l{k}"), layer_input.flatten(0, 1),
                                 getattr(self, f"weight_ih_l{k}").T).view(*layer_input.shape[:2], -1)
            state = (hx[0][k], hx[1][k]) if lstm else hx[k]
            outputs = []
            for t in range(x_proj.shape[0]):
                state = keep_finished(self._recurrent_step(x_proj[t], w_hh, b_hh, state), state, running[t])
                outputs.append(zero_finished(state[0] if lstm else state, running[t]))
            layer_input = torch.stack(outputs)
            finals.append(state)
        if lstm:
            return layer_input, (torch.stack([s[0] for s in finals]), torch.stack([s[1] for s in finals]))
        return layer_input, torch.stack(finals)

    def _recurrent_step(self, x_proj: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor, state):
        """One step of one layer from its input projection ``[B, G*H]``: the recurrent matmul,
        then the gate math. (``torch-compile`` compiles exactly this.)"""
        return recurrent_step(self.cell, x_proj, w_hh, b_hh, state)


def recurrent_step(cell: str, x_proj: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor, state):
    """The recurrent matmul ``h @ W_hh.T + b_hh`` and :func:`gate_math`."""
    h = state[0] if cell == "lstm" else state
    return gate_math(cell, x_proj, torch.addmm(b_hh, h, w_hh.T), state)


def gate_math(cell: str, x_proj: torch.Tensor, h_proj: torch.Tensor, state):
    """One step's gate math given both projections ``[B, G*H]`` (biases included) and the state
    (``h`` ``[B, H]``, or ``(h, c)`` for LSTM); returns the new state in the same form."""
    if cell == "lstm":
        i, f, g, o = (x_proj + h_proj).chunk(4, dim=1)
        c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c
    if cell == "gru":
        x_r, x_z, x_n = x_proj.chunk(3, dim=1)
        h_r, h_z, h_n = h_proj.chunk(3, dim=1)
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return n + z * (state - n)
    pre = x_proj + h_proj
    return torch.tanh(pre) if cell == "rnn_tanh" else torch.relu(pre)


register(
    Lane(
        "torch-fused-loop",
        "input projection hoisted into one matmul, one recurrent matmul per step (FastLSTM)",
        FusedLoop,
        lengths="masked",
    )
)
