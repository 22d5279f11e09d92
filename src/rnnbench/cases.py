"""What to measure: one point of a benchmark grid.

A :class:`Case` names a recurrent network (cell, sizes, depth), a numeric precision, a mode
(inference or training) and a device. Field names are the field's standard terms
(``batch_size``, ``seq_len``, ``input_size``, ``hidden_size``, ``num_layers``); the choices come
from the seed benchmarks in ``shared/seeds`` (see ``docs/methodology.md``).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Iterable, Mapping

from .errors import UsageError, check_choice, check_positive_int

CELLS = ("rnn_tanh", "rnn_relu", "lstm", "gru")
# Gates per cell, in torch.nn / cuDNN order: the rows of weight_ih are stacked in this order.
GATES = {"rnn_tanh": ("h",), "rnn_relu": ("h",), "lstm": ("i", "f", "g", "o"), "gru": ("r", "z", "n")}
# fp32 is strict IEEE float32 (TF32 off); tf32 lets matmuls use TensorFloat-32 on the GPU.
DTYPES = ("fp32", "tf32", "bf16", "fp16")
MODES = ("forward", "train")
# all_steps: MSE on every step's output (Theano/cuDNN tables); last_step: on the last (glample).
LOSSES = ("all_steps", "last_step")
DEVICES = ("cpu", "cuda")
SIZE_FIELDS = ("batch_size", "seq_len", "input_size", "hidden_size", "num_layers")
# A case past this many weights or activation elements is almost surely a typo (e.g. hidden 1e6).
MAX_ELEMENTS = 2**33


@dataclass(frozen=True)
class Case:
    """One benchmark configuration; validates itself on construction.

    Tensors follow torch.nn's sequence-first layout: input ``[seq_len, batch_size, input_size]``,
    output ``[seq_len, batch_size, hidden_size]``.

    ``lengths`` makes the batch variable-length: ``"MIN:MAX"`` draws each sequence's length
    uniformly from MIN..MAX (seeded from the case), padded to ``seq_len``; ``sort_lengths`` orders
    them longest first, as cuDNN's packed path prefers. ``""`` (the default): every sequence is
    ``seq_len`` long.

    Raises:
        UsageError: an unknown name, a size that is not a positive integer, or lengths outside
            ``1:seq_len``.
    """

    cell: str = "lstm"
    batch_size: int = 32
    seq_len: int = 30
    input_size: int = 128
    hidden_size: int = 128
    num_layers: int = 1
    dtype: str = "fp32"
    mode: str = "train"
    loss: str = "all_steps"
    device: str = "cpu"
    lengths: str = ""
    sort_lengths: bool = False

    def __post_init__(self) -> None:
        check_choice("cell", self.cell, CELLS)
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("mode", self.mode, MODES)
        check_choice("loss", self.loss, LOSSES)
        check_choice("device", self.device, DEVICES)
        for name in SIZE_FIELDS:
            check_positive_int(name, getattr(self, name))
        if self.dtype == "tf32" and self.device != "cuda":
            raise UsageError("dtype tf32 is a CUDA matmul mode; use fp32 on the CPU")
        if self.activation_elements > MAX_ELEMENTS or self.num_weights > MAX_ELEMENTS:
            raise UsageError(f"case {self.key} is too large to be a sensible benchmark")
        if self.lengths:
            self.length_range  # validates
        elif self.sort_lengths:
            raise UsageError("sort_lengths goes with lengths MIN:MAX")

    @property
    def length_range(self) -> tuple[int, int] | None:
        """``(MIN, MAX)`` of a variable-length case, None for a full-length one.

        Raises:
            UsageError: not ``MIN:MAX`` with ``1 <= MIN <= MAX <= seq_len``.
        """
        if not self.lengths:
            return None
        try:
            low, high = (int(v) for v in self.lengths.split(":"))
        except ValueError:
            raise UsageError(f"lengths takes MIN:MAX (e.g. 10:200), got {self.lengths!r}") from None
        if not 1 <= low <= high <= self.seq_len:
            raise UsageError(f"lengths {self.lengths} must lie within 1:{self.seq_len} (1 <= MIN <= MAX <= seq_len)")
        return low, high

    @property
    def num_gates(self) -> int:
        return len(GATES[self.cell])

    @property
    def num_weights(self) -> int:
        """Number of recurrent-layer parameters (both matrices and both biases, all layers)."""
        g, h = self.num_gates, self.hidden_size
        first = g * h * (self.input_size + h + 2)
        return first + (self.num_layers - 1) * g * h * (2 * h + 2)

    @property
    def activation_elements(self) -> int:
        return self.seq_len * self.batch_size * max(self.input_size, self.hidden_size) * self.num_layers

    @property
    def key(self) -> str:
        """A readable id such as ``lstm-B32-T30-I128-H128-L1-fp32-train-all_steps-cuda``, with
        ``-len10:200`` (``-len10:200s`` sorted) for a variable-length case."""
        key = (
            f"{self.cell}-B{self.batch_size}-T{self.seq_len}-I{self.input_size}-H{self.hidden_size}"
            f"-L{self.num_layers}-{self.dtype}-{self.mode}-{self.loss}-{self.device}"
        )
        return key + (f"-len{self.lengths}{'s' if self.sort_lengths else ''}" if self.lengths else "")

    def replace(self, **changes) -> "Case":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FIELDS = tuple(f.name for f in dataclasses.fields(Case))


def expand_grid(grid: Mapping[str, object]) -> list[Case]:
    """Every combination of a grid ``{field: value or list of values}`` as Cases, in order.

    ``input_size="hidden"`` sets the input size equal to the hidden size, as in the seed tables
    where the input and hidden layers have the same width.

    Raises:
        UsageError: an unknown field or an invalid value.
    """
    unknown = set(grid) - set(FIELDS)
    if unknown:
        raise UsageError(f"unknown case field(s): {', '.join(sorted(unknown))}")
    names = list(grid)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in grid.values()]
    cases = []
    for combo in itertools.product(*values):
        fields = dict(zip(names, combo))
        if fields.get("input_size") == "hidden":
            fields["input_size"] = fields.get("hidden_size", Case.hidden_size)
        cases.append(Case(**fields))
    return cases


def unique(cases: Iterable[Case]) -> list[Case]:
    """The cases in first-seen order with duplicates dropped."""
    return list(dict.fromkeys(cases))
