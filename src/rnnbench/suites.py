"""Named suites: lists of case grids kept as data. Adding a suite is adding an entry here.

Each suite is a list of grids (see :func:`rnnbench.cases.expand_grid`); the device is chosen at
run time. Sources are the seed benchmark READMEs in ``shared/seeds`` and the projects named.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cases import Case, expand_grid, unique
from .errors import UsageError

BOTH_MODES = ["train", "forward"]


@dataclass(frozen=True)
class Suite:
    name: str
    source: str
    grids: tuple[dict, ...]
    gpu_default: bool = True  # part of `rnnbench run` with no suite named, on a GPU


SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            "glample-2016",
            "glample/rnn-benchmarks (seed 001): input 100, seq 30, batch 20, last-step MSE, Titan X",
            (
                dict(cell=["rnn_tanh", "lstm"], batch_size=20, seq_len=30, input_size=100,
                     hidden_size=[100, 500], loss="last_step", mode=BOTH_MODES),
            ),
        ),
        Suite(
            "theano-cudnn-2016",
            "cudnn-rnn-benchmarks (seed 000): input = hidden, all-steps MSE, Titan X, cuDNN 5.1",
            (
                dict(cell=["lstm", "gru"], batch_size=[32, 128], seq_len=30, input_size="hidden",
                     hidden_size=[128, 512, 1024], num_layers=1, mode=BOTH_MODES),
                dict(cell=["lstm", "gru"], batch_size=128, seq_len=[30, 200], input_size="hidden",
                     hidden_size=[512, 1024], num_layers=3, mode=BOTH_MODES),
            ),
        ),
        Suite(
            "fastrnns",
            "PyTorch benchmarks/fastrnns defaults: seq 100, batch 64, input 512, hidden 512, 1 layer",
            (
                dict(cell="lstm", batch_size=64, seq_len=100, input_size=512, hidden_size=512,
                     num_layers=1, mode=BOTH_MODES),
            ),
        ),
        Suite(
            "flashrnn-2024",
            "FlashRNN (Pöppel et al., 2024) setting: LSTM, batch 16, seq 1024, input = hidden = 768",
            (
                dict(cell="lstm", batch_size=16, seq_len=1024, input_size=768, hidden_size=768,
                     dtype=["bf16", "fp16"], mode=BOTH_MODES),
            ),
        ),
        Suite(
            "varlen",
            "rnnbench: variable-length batches, lengths 10:200 padded to 200, batch 64, input = hidden = 512",
            (
                dict(cell=["lstm", "gru"], batch_size=64, seq_len=200, input_size=512, hidden_size=512,
                     lengths="10:200", sort_lengths=[False, True], mode=BOTH_MODES),
            ),
            gpu_default=False,
        ),
        Suite(
            "quick",
            "CPU-sized smoke suite: every cell and mode at small sizes (about 2.5 minutes on 2 cores with every CPU lane)",
            (
                dict(cell=["rnn_tanh", "rnn_relu", "lstm", "gru"], batch_size=8, seq_len=16,
                     input_size=32, hidden_size=32, mode=BOTH_MODES),
                dict(cell=["lstm", "gru"], batch_size=4, seq_len=8, input_size=24, hidden_size=48,
                     num_layers=2, loss="last_step", mode=BOTH_MODES),
            ),
            gpu_default=False,
        ),
    ]
}


def suite_cases(name: str, device: str, **overrides) -> list[Case]:
    """The cases of suite ``name`` on ``device``; ``overrides`` replace a field in every case.

    Raises:
        UsageError: unknown suite name.
    """
    if name not in SUITES:
        raise UsageError(f"unknown suite {name!r}; choose from {', '.join(SUITES)}")
    cases = []
    for grid in SUITES[name].grids:
        cases += expand_grid({**grid, **overrides, "device": device})
    return unique(cases)


def default_suites(device: str) -> list[str]:
    """What `rnnbench run` measures when no suite or grid is named: the seed suites on a GPU,
    the CPU-sized `quick` suite otherwise."""
    if device == "cuda":
        return [s.name for s in SUITES.values() if s.gpu_default]
    return ["quick"]
