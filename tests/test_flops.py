"""rnnbench.flops: the matmul count checked against an independent one, torch's FlopCounterMode,
which counts every aten mm/addmm/bmm an operation dispatches (2·m·n·k each, bias adds not counted),
that is exactly the matmul work.

The modules are float64 on purpose: on the CPU, float32 inference of torch.nn.LSTM goes to
oneDNN's fused RNN kernel (``mkldnn_rnn_layer``), which the counter does not see (it counts 0);
float64 runs ATen's own layers, made of addmm/mm. The sizes are odd so that no two factors can
stand in for each other. In training every input of the network (x, h0, c0) requires a gradient,
as in the benchmark's train step: with h0 left out, autograd skips the first step's gradient to
it, and the count falls short by 2·B·G·H·H per layer and direction.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from rnnbench.cases import Case
from rnnbench.flops import case_flops, matmul_flops

BATCH, SEQ, INPUT, HIDDEN, LAYERS = 3, 7, 37, 29, 2
MODULES = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}


def _counted(cell: str, bidirectional: bool, train: bool, lengths: list[int] | None = None) -> int:
    """FlopCounterMode's total for one forward (and with ``train`` backward) of a float64 torch.nn
    stack, the batch packed to ``lengths`` when given."""
    torch.manual_seed(0)
    directions = 2 if bidirectional else 1
    module = MODULES[cell](INPUT, HIDDEN, LAYERS, bidirectional=bidirectional, dtype=torch.float64)
    x = torch.randn(SEQ, BATCH, INPUT, dtype=torch.float64, requires_grad=train)
    states = [torch.randn(LAYERS * directions, BATCH, HIDDEN, dtype=torch.float64, requires_grad=train)
              for _ in range(2 if cell == "lstm" else 1)]
    hx = tuple(states) if cell == "lstm" else states[0]
    sequence = x if lengths is None else torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths))
    with FlopCounterMode(display=False) as counter, torch.set_grad_enabled(train):
        output, h_n = module(sequence, hx)
        if train:
            output = output if lengths is None else output.data
            finals = h_n if cell == "lstm" else (h_n,)
            (output.sum() + sum(f.sum() for f in finals)).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("train", [False, True], ids=["forward", "train"])
@pytest.mark.parametrize("cell", list(MODULES))
def test_count_matches_flop_counter(cell, train, bidirectional):
    expected = _counted(cell, bidirectional, train)
    assert expected > 0
    assert matmul_flops(cell, INPUT, HIDDEN, LAYERS, BATCH * SEQ, bidirectional=bidirectional,
                        train=train) == expected


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_variable_length_counts_the_useful_steps(cell):
    """A packed batch computes only the steps of real data: the count over the sum of the lengths
    is what the counter sees, forward and backward, one direction and two."""
    lengths = [7, 4, 2]
    for bidirectional in (False, True):
        counted = _counted(cell, bidirectional, True, lengths)
        assert matmul_flops(cell, INPUT, HIDDEN, LAYERS, sum(lengths), bidirectional=bidirectional,
                            train=True) == counted


def test_case_flops_is_the_count_of_the_case():
    train = Case(cell="gru", batch_size=BATCH, seq_len=SEQ, input_size=INPUT, hidden_size=HIDDEN,
                 num_layers=LAYERS, mode="train")
    forward = train.replace(mode="forward")
    assert case_flops(forward) == matmul_flops("gru", INPUT, HIDDEN, LAYERS, BATCH * SEQ)
    assert case_flops(train) == 3 * case_flops(forward)
    assert case_flops(train, timesteps=13) == matmul_flops("gru", INPUT, HIDDEN, LAYERS, 13, train=True)


def test_rnn_relu_counts_as_rnn_tanh():
    assert matmul_flops("rnn_relu", 5, 6, 2, 10) == matmul_flops("rnn_tanh", 5, 6, 2, 10) > 0
