"""The dense matmul peak of the device in a dtype, measured in the run: the denominator of each
result row's ``peak_fraction``.

A datasheet peak is the wrong denominator: clocks, power limits and the library's kernels decide
what a card reaches, and a CPU has no datasheet figure at all. So the peak is what this machine
gives one large square ``torch.mm`` in the case's dtype, under the case's matmul mode
(:func:`rnnbench.precision.matmul_mode`: ``fp32`` strict, ``tf32`` on TensorFloat-32), timed by
the package's one clock (:func:`rnnbench.timing.measure`: synchronised, warmed up) and taken as
the best run (a peak is the fastest the hardware went, not a typical speed).

The size: ``n`` doubles from 128 until one call takes :data:`MIN_CALL_MS` or ``n`` reaches
:data:`MAX_SIZE` (8192 on a GPU, where a smaller matmul does not fill the machine; 2048 on the
CPU). So a GPU gets 8192³ in about a second per dtype, and a CPU 1024³ or so in a fraction of a
second, while a dtype the CPU has no fast kernel for (fp16: about 2 GFLOP/s on our 2-core
development machine, 2.7 s for one 1024³ call) stops at a size that still takes well under a
second.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .precision import TORCH_DTYPE, matmul_mode
from .timing import measure, time_call

MAX_SIZE = {"cuda": 8192, "cpu": 2048}
# A call this long is far past launch and cache effects: the size stops growing here.
MIN_CALL_MS = 10.0
# Seconds of timed calls after the size is chosen (at least 5 calls are timed in any case).
BUDGET_S = {"cuda": 0.5, "cpu": 0.05}
FIRST_SIZE = 128


@dataclass(frozen=True)
class Peak:
    """``tflops``: 2·n³ / the best call's time, in TFLOP/s; ``size``: the ``n`` of the n×n×n matmul."""

    tflops: float
    size: int


def matmul_peak(device: str, dtype: str) -> Peak:
    """Measure the dense matmul peak of ``device`` (``cpu`` or ``cuda``, torch's current GPU) in
    ``dtype`` (a case's: ``fp32``, ``tf32``, ``bf16``, ``fp16``), as the module docstring says.

    Raises:
        KeyError: an unknown device or dtype.
        torch.cuda.OutOfMemoryError, RuntimeError: the operands (3 · n² elements) do not fit.
    """
    with matmul_mode(dtype), torch.no_grad():
        n = FIRST_SIZE
        while True:
            a, b, out = (torch.randn(n, n, device=device, dtype=TORCH_DTYPE[dtype]) for _ in range(3))
            call = lambda: torch.mm(a, b, out=out)  # noqa: E731  (preallocated: the allocator is not timed)
            call()  # the first call at a size holds library set-up (cuBLAS handles, kernel choice)
            _, call_ms = time_call(call, device)
            if call_ms >= MIN_CALL_MS or n >= MAX_SIZE[device]:
                break
            n *= 2
        m = measure(call, device, budget_s=BUDGET_S[device], first_call_ms=call_ms)
    best_s = min(m.samples_ms) / 1e3
    return Peak(2 * n**3 / best_s / 1e12, n)
