"""The recurrent language model: embedding -> recurrent layers -> dropout -> linear decoder.

The shape of the PyTorch word_language_model example's ``RNNModel`` (dropout on the embedding
output and on the recurrent output, optional weight tying as in Press & Wolf 2017 / Inan et al.
2017), with the recurrent layers built by a lane so that the same model times any implementation.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import UsageError
from ..lanes import get_lane

# --rnn names (torch.nn's, as in the PyTorch example) -> the lanes' cell names.
RNN_TYPES = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}

Hidden = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


def cell_name(rnn: str) -> str:
    """``LSTM`` -> ``lstm`` etc. (case-insensitive). Raises UsageError for an unknown type."""
    cell = RNN_TYPES.get(rnn.upper())
    if cell is None:
        raise UsageError(f"unknown rnn {rnn!r}; choose from {', '.join(RNN_TYPES)}")
    return cell


def check_lane(lane_name: str, cell: str):
    """The lane called ``lane_name`` if it can run the recurrent layers of a language model.

    Raises:
        UsageError: unknown lane, a lane that has no such cell, or a CUDA-graph lane (those replay
            one fixed captured step; a training loop with an optimiser and a carried hidden state
            is not that).
    """
    lane = get_lane(lane_name)
    if lane.cuda_graph:
        raise UsageError(f"lane {lane_name!r} replays a captured CUDA graph and cannot train a "
                         "language model; use torch-nn")
    if cell not in lane.cells:
        raise UsageError(f"lane {lane_name!r} has no {cell} cell")
    return lane


def build_recurrent(lane_name: str, cell: str, input_size: int, hidden_size: int,
                    num_layers: int) -> nn.Module:
    """The lane's recurrent module, ``module(x [T, B, I], hx) -> (output [T, B, H], h_n)``.

    Raises:
        UsageError: as :func:`check_lane`.
    """
    return check_lane(lane_name, cell).build(cell, input_size, hidden_size, num_layers)


def detach_hidden(hidden: Hidden) -> Hidden:
    """The state with its history cut: truncated BPTT stops gradients at the window boundary."""
    if isinstance(hidden, tuple):
        return tuple(h.detach() for h in hidden)
    return hidden.detach()


class RNNModel(nn.Module):
    """Word- or character-level recurrent language model.

    ``forward(tokens [T, B] int64, hidden) -> (logits [T, B, V], hidden)``, hidden ``[L, B, H]``
    or ``(h, c)`` of those for LSTM.

    Args:
        vocab_size: V.
        rnn: ``LSTM``, ``GRU``, ``RNN_TANH`` or ``RNN_RELU``.
        emb_size, hidden_size, num_layers: the sizes (emb_size is the recurrent input size).
        dropout: probability, applied to the embedding output and to the recurrent output.
        tied: share the embedding matrix with the decoder (needs emb_size == hidden_size).
        lane: registry name of the recurrent implementation (``torch-nn``, ``torch-cell-loop``...).
        init_range: embedding and decoder weights ~ U(-r, r), decoder bias 0 (PyTorch example:
            0.1; Zaremba et al. 2014: 0.04 or 0.05).
        init_rnn: also draw the recurrent weights from U(-r, r) as Zaremba et al. do (otherwise
            the lane's default, torch.nn's U(-1/sqrt(H), 1/sqrt(H))).

    Raises:
        UsageError: tied with emb_size != hidden_size, unknown rnn or lane, CUDA-graph lane.
    """

    def __init__(self, vocab_size: int, rnn: str = "LSTM", emb_size: int = 64,
                 hidden_size: int = 64, num_layers: int = 1, dropout: float = 0.0,
                 tied: bool = False, lane: str = "torch-nn", init_range: float = 0.1,
                 init_rnn: bool = False):
        super().__init__()
        if tied and emb_size != hidden_size:
            raise UsageError(f"--tied needs emb_size == hidden_size, got {emb_size} and {hidden_size}")
        self.cell = cell_name(rnn)
        self.hidden_size, self.num_layers = hidden_size, num_layers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab_size, emb_size)
        self.rnn = build_recurrent(lane, self.cell, emb_size, hidden_size, num_layers)
        self.decoder = nn.Linear(hidden_size, vocab_size)
        self._init_weights(init_range, init_rnn)
        if tied:
            self.decoder.weight = self.encoder.weight

    def _init_weights(self, init_range: float, init_rnn: bool) -> None:
        nn.init.uniform_(self.encoder.weight, -init_range, init_range)
        nn.init.uniform_(self.decoder.weight, -init_range, init_range)
        nn.init.zeros_(self.decoder.bias)
        if init_rnn:
            for p in self.rnn.parameters():
                nn.init.uniform_(p, -init_range, init_range)

    def forward(self, tokens: torch.Tensor, hidden: Hidden) -> tuple[torch.Tensor, Hidden]:
        emb = self.drop(self.encoder(tokens))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, batch_size: int) -> Hidden:
        """Zero state ``[L, B, H]`` (a pair for LSTM) on the model's device, float32."""
        weight = self.decoder.weight
        zeros = weight.new_zeros(self.num_layers, batch_size, self.hidden_size, dtype=torch.float32)
        return (zeros, zeros.clone()) if self.cell == "lstm" else zeros
