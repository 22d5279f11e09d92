"""The arithmetic of a case: floating-point operations of its matmuls, the one count of the package.

A layer of ``G`` gates (LSTM 4, GRU 3, RNN 1) computes per step and per sequence
``gates = W_ih x_t + W_hh h_{t-1}``: two matmuls of ``G·H`` rows over ``I_l`` and ``H`` columns. An
``m × k`` by ``k × n`` matmul is counted as ``2·m·n·k`` operations (one multiply and one add per
term, the usual convention, and what ``torch.utils.flop_counter`` counts for ``mm``/``addmm``), so
forward, per layer ``l`` and direction:

    2 · T · B · G · H · (I_l + H),   I_0 = input_size, I_l = hidden_size · directions (l > 0).

Training (forward + backward) is 3× the forward: for each forward matmul ``Y = X W`` the backward
computes ``dX = dY Wᵀ`` and ``dW = Xᵀ dY``, two matmuls of the same size (the "6N per token" rule
of Kaplan et al. 2020, *Scaling Laws for Neural Language Models*, section 2.1, is this factor of 3
on the 2N forward). It is exact for our train step, which computes the gradient to the input and
to the initial states as well as to every weight.

Not counted: the element-wise work (gate nonlinearities, the cell update, bias adds, the loss),
a few operations per gate element against ``I_l + H`` multiply-adds, and whatever a lane does
beyond the useful work (``torch-nn-padded`` runs the padding of a variable-length batch too: its
figure counts the useful steps only, like ``useful_timesteps_per_s``).
"""

from __future__ import annotations

from .cases import GATES, Case

# Backward = two matmuls of each forward matmul's size (see the module docstring).
TRAIN_FACTOR = 3


def matmul_flops(cell: str, input_size: int, hidden_size: int, num_layers: int, timesteps: int, *,
                 bidirectional: bool = False, train: bool = False) -> int:
    """Floating-point operations of the matmuls of a stack of recurrent layers.

    Args:
        cell: ``lstm``, ``gru``, ``rnn_tanh`` or ``rnn_relu`` (see :data:`rnnbench.cases.GATES`).
        input_size, hidden_size, num_layers: torch.nn's sizes.
        timesteps: (sequence, step) pairs computed: ``batch_size · seq_len`` for a full-length batch,
            the sum of the lengths for a variable-length one.
        bidirectional: two directions per layer, the next layer's input ``2 · hidden_size`` wide.
        train: forward and backward (3× the forward), else the forward alone.

    Returns:
        The count (an int; divide by seconds and 1e12 for TFLOP/s).

    Raises:
        KeyError: an unknown cell.
    """
    directions = 2 if bidirectional else 1
    gate_rows = len(GATES[cell]) * hidden_size
    per_step = 0
    for layer in range(num_layers):
        layer_input = input_size if layer == 0 else hidden_size * directions
        per_step += directions * 2 * gate_rows * (layer_input + hidden_size)
    return per_step * timesteps * (TRAIN_FACTOR if train else 1)


def case_flops(case: Case, timesteps: int | None = None) -> int:
    """:func:`matmul_flops` of one step of ``case`` (``train`` mode counts the backward too) over
    ``timesteps`` (default ``batch_size · seq_len``; pass the useful ones of a variable-length
    batch)."""
    steps = case.batch_size * case.seq_len if timesteps is None else timesteps
    return matmul_flops(case.cell, case.input_size, case.hidden_size, case.num_layers, steps,
                        train=case.mode == "train")
