"""Numeric precision of a case: the tensor dtype and the matmul mode it implies."""

from __future__ import annotations

import contextlib
import functools

import torch

from .errors import UsageError

TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# Largest relative error ‖lane − ref‖/‖ref‖ accepted against the float64 reference, for the output
# and for every gradient. fp32 rounding lands far below 1e-4; TF32 keeps 10 mantissa bits (about
# 3e-4 per product) and half types 8 (bf16) or 11 (fp16); long recurrences and backward passes
# through many steps accumulate more, hence the margins (docs/methodology.md).
TOLERANCE = {"fp32": 1e-4, "tf32": 1e-2, "bf16": 6e-2, "fp16": 2e-2}
# ReLU's kink: a pre-activation near 0 that rounding moves to the other side switches a whole
# gradient path on or off, so a correct lane in reduced precision can miss the reference by several
# times the usual error (seen: grad_x 4.7e-2 in fp16, 7.7e-2 in bf16, 1.4e-2 in tf32, with cuDNN
# and both loop lanes agreeing with each other). tanh cells, on the same code paths, stay strict.
RELU_SLACK = 4.0


def tolerance(cell: str, dtype: str) -> float:
    """Largest accepted relative error for ``cell`` in ``dtype`` (see TOLERANCE, RELU_SLACK)."""
    slack = RELU_SLACK if cell == "rnn_relu" and dtype != "fp32" else 1.0
    return TOLERANCE[dtype] * slack


@contextlib.contextmanager
def matmul_mode(dtype: str):
    """Within the block, float32 matmuls and cuDNN convolutions/RNNs use TF32 only for ``tf32``.

    The previous settings are restored on exit. PyTorch's own default allows TF32 in cuDNN but
    not in cuBLAS, which would make "fp32" mean a mix; we make it strict.
    """
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    allow = dtype == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` if a GPU is visible, else ``cpu``.

    Raises:
        UsageError: an unknown name, or ``cuda`` with no GPU visible.
    """
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name not in ("cpu", "cuda"):
        raise UsageError(f"unknown device {name!r}; choose from auto, cpu, cuda")
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda, but no CUDA device is visible")
    return name


def device_supports(device: str, dtype: str) -> str | None:
    """None if ``device`` can run ``dtype``, else a one-line reason."""
    if device == "cuda":
        if not torch.cuda.is_available():
            return "no CUDA device is visible"
        major, _ = torch.cuda.get_device_capability()
        if dtype == "bf16" and not torch.cuda.is_bf16_supported():
            return "this GPU has no bfloat16 support"
        if dtype == "tf32" and major < 8:
            return "TF32 needs an Ampere or newer GPU"
    elif dtype == "tf32":
        return "tf32 is a CUDA matmul mode"
    return None


@functools.lru_cache(maxsize=None)
def cpu_runs_bf16_rnn() -> bool:
    """Whether this CPU runs ``torch.nn.LSTM`` under bfloat16 autocast with an initial state, as
    the language model calls it. oneDNN does not build that primitive on every CPU: on an
    AVX2-only AMD EPYC (torch 2.13) it raised "could not create a primitive descriptor for the
    LSTM forward propagation primitive", while a bf16 module with bf16 states, and autocast
    without states, ran. The per-step lanes, made of matmuls, run bf16 there all the same."""
    lstm, x = torch.nn.LSTM(2, 2), torch.zeros(1, 1, 2)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lstm(x, (torch.zeros(1, 1, 2), torch.zeros(1, 1, 2)))
    except RuntimeError:
        return False
    return True
