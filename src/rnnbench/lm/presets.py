"""Language-model configurations as data.

:class:`LMConfig` holds every setting with a commented default (the CPU-sized ``small`` preset);
:data:`PRESETS` names the published settings this benchmark reproduces. Command-line options
override single fields with :meth:`LMConfig.override`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import UsageError, check_choice, check_positive_int
from ..lanes import LANES
from .model import RNN_TYPES

OPTIMIZERS = ("sgd", "adam")
AMP_MODES = ("off", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class LMConfig:
    """One language-model run. Validates itself on construction (UsageError on bad values)."""

    preset: str = "small"  # the name this configuration started from (recorded in result rows)
    # --- model -------------------------------------------------------------------------------
    rnn: str = "LSTM"  # LSTM | GRU | RNN_TANH | RNN_RELU (torch.nn's names)
    emb_size: int = 64  # embedding width = input size of the first recurrent layer
    hidden_size: int = 64
    num_layers: int = 1
    dropout: float = 0.2  # on the embedding output and on the recurrent output
    tied: bool = False  # decoder shares the embedding matrix (needs emb_size == hidden_size)
    init_range: float = 0.1  # embedding/decoder ~ U(-r, r) (PyTorch example)
    init_rnn: bool = False  # also the recurrent weights ~ U(-r, r) (Zaremba et al. 2014)
    lane: str = "torch-nn"  # which implementation runs the recurrent layers
    # --- data --------------------------------------------------------------------------------
    batch_size: int = 16  # parallel token streams
    bptt: int = 32  # window length of truncated backpropagation through time
    eval_batch_size: int | None = None  # None: same as batch_size (throughput comparable)
    # --- optimisation ------------------------------------------------------------------------
    optimizer: str = "adam"  # sgd | adam (plain, no momentum or weight decay)
    lr: float = 3e-3
    lr_decay: float = 1.0  # lr *= lr_decay every epoch after the first lr_decay_after epochs
    lr_decay_after: int = 0
    clip: float = 0.25  # max global L2 norm of the gradients; 0 turns clipping off
    epochs: int = 1
    seed: int = 1234
    # --- precision, limits, device -----------------------------------------------------------
    amp: str = "off"  # off | bf16 | fp16: torch.autocast (fp16 adds a GradScaler)
    tf32: bool = False  # let float32 matmuls/cuDNN use TF32 (CUDA only); off = strict fp32
    max_steps: int | None = None  # stop training after this many optimiser steps in total
    max_minutes: float | None = None  # stop training after this much wall time (then evaluate)
    device: str = "auto"  # auto | cpu | cuda

    def __post_init__(self) -> None:
        check_choice("rnn", str(self.rnn).upper(), tuple(RNN_TYPES))
        object.__setattr__(self, "rnn", self.rnn.upper())  # "lstm" and "LSTM" are one config
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("amp", self.amp, AMP_MODES)
        check_choice("device", self.device, DEVICES)
        if self.lane not in LANES:
            raise UsageError(f"unknown lane {self.lane!r}; choose from {', '.join(LANES)}")
        for name in ("emb_size", "hidden_size", "num_layers", "batch_size", "bptt", "epochs"):
            check_positive_int(name, getattr(self, name))
        for name in ("eval_batch_size", "max_steps"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise UsageError(f"dropout must be in [0, 1), got {self.dropout!r}")
        _positive_float("lr", self.lr)
        _positive_float("init_range", self.init_range)
        _positive_float("lr_decay", self.lr_decay)
        if not (math.isfinite(self.clip) and self.clip >= 0):
            raise UsageError(f"clip must be >= 0 (0 = off), got {self.clip!r}")
        if self.lr_decay_after < 0:
            raise UsageError(f"lr_decay_after must be >= 0, got {self.lr_decay_after!r}")
        if self.max_minutes is not None:
            _positive_float("max_minutes", self.max_minutes)
        if self.tied and self.emb_size != self.hidden_size:
            raise UsageError(f"--tied needs emb_size == hidden_size, got {self.emb_size} and "
                             f"{self.hidden_size}")

    @property
    def precision(self) -> str:
        """``fp32``, ``tf32``, ``bf16-amp`` or ``fp16-amp``: the label used in result rows."""
        if self.amp != "off":
            return f"{self.amp}-amp"
        return "tf32" if self.tf32 else "fp32"

    def override(self, **changes) -> "LMConfig":
        """A copy with the fields in ``changes`` that are not None replaced (CLI options).

        Raises:
            UsageError: an unknown field or an invalid value.
        """
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise UsageError(f"unknown lm option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _positive_float(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise UsageError(f"{name} must be a positive number, got {value!r}")


PRESETS: dict[str, LMConfig] = {
    # CPU-sized default: finishes an epoch of a small corpus in seconds; the field defaults.
    "small": LMConfig(),
    # Seed 002 (k-kawakami/rnn_benchmark, PyTorch 0.1.12, WikiText-2): its run.py command line,
    #   -rnn LSTM -nlayers 1 -emb_dim 1024 -hid_dim 1024 -tied 0 -epochs 10 -optimizer Adam
    #   -lr 0.0002 -dropout 0.5 -batch_size 128 -seq_len 128 -clip 0.1 -seed 1234
    # Its README says gradient clipping was removed for speed yet lists -clip 0.1; we keep the
    # command line. Reported: P100-SXM2 547k train words/s, Titan X 355k (eval figures unsynchronised).
    "kawakami-2017": LMConfig(
        preset="kawakami-2017", rnn="LSTM", emb_size=1024, hidden_size=1024, num_layers=1,
        dropout=0.5, tied=False, batch_size=128, bptt=128, optimizer="adam", lr=2e-4, clip=0.1,
        epochs=10, seed=1234),
    # Zaremba, Sutskever & Vinyals 2014, "Recurrent Neural Network Regularization", PTB "large"
    # (TensorFlow ptb_word_lm LargeConfig): 2 x 1500 LSTM, 65% dropout (keep_prob 0.35), batch 20,
    # 35 steps, plain SGD lr 1 divided by 1.15 every epoch after the 14th, gradient norm clipped
    # at 10, 55 epochs, every weight ~ U(-0.04, 0.04), untied. Seed 003 measured this model in
    # TensorFlow on a P40: BasicLSTMCell 15k, LSTMBlockCell 17k, CudnnLSTM 32k words/s.
    "zaremba-large": LMConfig(
        preset="zaremba-large", rnn="LSTM", emb_size=1500, hidden_size=1500, num_layers=2,
        dropout=0.65, tied=False, init_range=0.04, init_rnn=True, batch_size=20, bptt=35,
        optimizer="sgd", lr=1.0, lr_decay=1 / 1.15, lr_decay_after=14, clip=10.0, epochs=55,
        seed=1234),
}


def get_preset(name: str) -> LMConfig:
    """The preset called ``name``. Raises UsageError for an unknown name."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]
