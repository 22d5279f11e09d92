"""rnnbench.peak: the dense matmul peak, measured on the CPU here (the GPU's in tests/test_cuda.py)."""

from __future__ import annotations

import math
import time

import pytest
import torch

from rnnbench import peak


def test_cpu_fp32_peak_is_measured_quickly():
    start = time.perf_counter()
    result = peak.matmul_peak("cpu", "fp32")
    elapsed = time.perf_counter() - start
    assert math.isfinite(result.tflops) and result.tflops > 0
    assert peak.FIRST_SIZE <= result.size <= peak.MAX_SIZE["cpu"]
    # Well under a second on the 2-core CI machine (about 0.2 s on one thread); the bound leaves room
    # for a loaded machine without letting a run's fixed cost grow unnoticed.
    assert elapsed < 3.0


def test_size_grows_until_a_call_is_long_enough(monkeypatch):
    """Doubling from FIRST_SIZE stops at the first size whose call takes MIN_CALL_MS, or at the
    device's MAX_SIZE; the best timed call gives the figure (2·n³ / seconds)."""
    seen = []

    def fake_time_call(fn, device):
        n = fn().shape[0]
        seen.append(n)
        return None, 5.0 * (n / peak.FIRST_SIZE)  # 5 ms at 128, 10 ms at 256

    monkeypatch.setattr(peak, "time_call", fake_time_call)
    monkeypatch.setattr(peak, "measure", lambda fn, device, budget_s, first_call_ms: type(
        "M", (), {"samples_ms": (3.0, 2.0, 4.0)})())
    result = peak.matmul_peak("cpu", "fp32")
    assert seen == [128, 256] and result.size == 256
    assert result.tflops == pytest.approx(2 * 256**3 / 2e-3 / 1e12)
    monkeypatch.setattr(peak, "MAX_SIZE", {"cpu": 128})
    assert peak.matmul_peak("cpu", "fp32").size == 128


@pytest.mark.parametrize("dtype, tf32, torch_dtype", [("fp32", False, torch.float32), ("tf32", True, torch.float32),
                                                       ("bf16", False, torch.bfloat16)])
def test_matmul_runs_in_the_case_dtype_and_matmul_mode(monkeypatch, dtype, tf32, torch_dtype):
    """fp32 is timed strict (TF32 off), tf32 with TF32 on, as the cases are; settings restored."""
    seen = set()
    real = torch.mm

    def spy(a, b, out):
        seen.add((a.dtype, torch.backends.cuda.matmul.allow_tf32))
        return real(a, b, out=out)

    monkeypatch.setattr(peak, "MAX_SIZE", {"cpu": 128})
    monkeypatch.setattr(torch, "mm", spy)
    before = torch.backends.cuda.matmul.allow_tf32
    peak.matmul_peak("cpu", dtype)
    assert seen == {(torch_dtype, tf32)}
    assert torch.backends.cuda.matmul.allow_tf32 == before
