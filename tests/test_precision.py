"""rnnbench.precision: dtype map, tolerances, the strict-fp32 matmul mode, device support."""

from __future__ import annotations

import pytest
import torch

from rnnbench.cases import DTYPES
from rnnbench.precision import TOLERANCE, TORCH_DTYPE, device_supports, matmul_mode


def test_every_dtype_has_a_torch_dtype_and_a_tolerance():
    assert set(TORCH_DTYPE) == set(TOLERANCE) == set(DTYPES)
    assert TORCH_DTYPE["fp32"] is TORCH_DTYPE["tf32"] is torch.float32
    assert TORCH_DTYPE["bf16"] is torch.bfloat16 and TORCH_DTYPE["fp16"] is torch.float16
    # fewer mantissa bits, looser tolerance; fp32 strict stays tight
    assert TOLERANCE["fp32"] <= 1e-4 < TOLERANCE["tf32"] < TOLERANCE["bf16"]
    assert TOLERANCE["fp32"] < TOLERANCE["fp16"] < TOLERANCE["bf16"]


@pytest.mark.parametrize("dtype, allowed", [("fp32", False), ("tf32", True), ("bf16", False), ("fp16", False)])
@pytest.mark.parametrize("before", [False, True])
def test_matmul_mode_sets_and_restores(dtype, allowed, before):
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    old = (matmul.allow_tf32, cudnn.allow_tf32)
    try:
        matmul.allow_tf32 = cudnn.allow_tf32 = before
        with matmul_mode(dtype):
            assert (matmul.allow_tf32, cudnn.allow_tf32) == (allowed, allowed)
        assert (matmul.allow_tf32, cudnn.allow_tf32) == (before, before)
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = old


def test_matmul_mode_restores_on_error():
    cudnn = torch.backends.cudnn
    old = cudnn.allow_tf32
    try:
        cudnn.allow_tf32 = True
        with pytest.raises(RuntimeError), matmul_mode("fp32"):
            assert not cudnn.allow_tf32
            raise RuntimeError("lane broke")
        assert cudnn.allow_tf32
    finally:
        cudnn.allow_tf32 = old


def test_device_supports_cpu():
    for dtype in ("fp32", "bf16", "fp16"):
        assert device_supports("cpu", dtype) is None
    assert "CUDA" in device_supports("cpu", "tf32")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU answer")
def test_device_supports_cuda_without_gpu():
    assert device_supports("cuda", "fp32") == "no CUDA device is visible"


def test_resolve_device():
    from rnnbench.errors import UsageError
    from rnnbench.precision import resolve_device

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(UsageError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="no CUDA device"):
            resolve_device("cuda")
