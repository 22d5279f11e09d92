"""How much memory a case needs, estimated before anything is allocated, and how much there is.

A case too big for the machine must become a row saying so, not a crash of the whole run (a
``MemoryError`` half-way through building a 30,000-wide reference, or the OOM killer). The
estimate counts the large tensors of one (case, lane) pair at its peak: the float32 inputs on the
host, the float64 reference with its autograd graph, and a lane holding the same kind of graph in
the case's dtype. It errs high; ``tests/test_cuda.py`` checks it against the measured peak.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .cases import Case

BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}
# Tensors of size [B, H] that a readable cell step leaves in the autograd graph per step and
# layer: per gate row (pre-activation, activation, and a margin) and for the cell update. Fitted
# to the measured peak on an H100 (reference + torch-nn, LSTM B64 T50 H512 L2 train: 305 MiB,
# about 12 per step and layer; an earlier 6-per-gate count estimated 4.6x too high), then
# rounded up so the estimate stays above the peak: tests/test_cuda.py checks both bounds.
SAVED_PER_GATE, SAVED_PER_STEP = 3, 4


def _elements(case: Case) -> dict[str, int]:
    b, t, i, h, layers = case.batch_size, case.seq_len, case.input_size, case.hidden_size, case.num_layers
    steps = t * layers * b * h  # one [B, H] per step and layer
    return {"weights": case.num_weights, "x": t * b * i, "states": 2 * layers * b * h,
            "outputs": t * b * h + steps, "saved": steps * (SAVED_PER_GATE * case.num_gates + SAVED_PER_STEP)}


def case_bytes(case: Case) -> dict[str, int]:
    """Estimated peak bytes of one (case, lane) pair: ``{"host": ..., "device": ...}``.

    Host: the float32 inputs and targets (every lane's source). The reference (float64) and the
    lane (the case's dtype) live on the case's device: weights and their gradients, the input and
    its gradient, and in train mode the activations the backward pass keeps.
    """
    n = _elements(case)
    host = 4 * (n["weights"] + n["x"] + 3 * n["states"] + n["outputs"])
    train = case.mode == "train"
    graph = n["saved"] if train else 2 * case.batch_size * case.hidden_size * case.num_gates
    per_element = 2 * (n["weights"] + n["x"] + n["states"]) + n["outputs"] + graph
    on_device = (8 + BYTES[case.dtype]) * per_element
    if case.device == "cpu":
        return {"host": host + on_device, "device": 0}
    return {"host": host, "device": on_device}


def available_bytes(device: str) -> int | None:
    """Memory free for a new case on ``device`` (bytes), or None when it cannot be read.

    CUDA: free device memory plus what PyTorch's caching allocator holds (it is reused). CPU: the
    kernel's ``MemAvailable``.
    """
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def too_large(case: Case) -> str | None:
    """None if ``case`` should fit here, else a one-line reason (the row's message)."""
    need = case_bytes(case)
    gib = 2**30
    host_free = available_bytes("cpu")
    if host_free is not None and need["host"] > host_free:
        return (f"needs about {need['host'] / gib:.1f} GiB of host memory (estimate), "
                f"{host_free / gib:.1f} GiB available; not attempted")
    if case.device == "cuda":
        dev_free = available_bytes("cuda")
        if dev_free is not None and need["device"] > dev_free:
            return (f"needs about {need['device'] / gib:.1f} GiB of GPU memory (estimate), "
                    f"{dev_free / gib:.1f} GiB free; not attempted")
    return None
