"""The kernels under Triton's interpreter, on CPU tensors, unless this process already compiled
them for a GPU.

Whether a Triton kernel is interpreted is fixed when its module is imported, so the kernels are
imported here with ``TRITON_INTERPRET=1`` set just for that import (restored afterwards, so
subprocesses of other tests, e.g. the CLI's, see the environment they had). On a CUDA machine the
variable is not set here: there the real kernels are compiled and the interpreter tests skip;
run them in a process of their own with ``TRITON_INTERPRET=1 pytest tests/ops tests/test_nn.py``.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

if "rnnbench.ops.common" not in sys.modules and not torch.cuda.is_available():
    _before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import rnnbench.ops.recurrence  # noqa: F401  (the kernels become interpreted functions)
    finally:
        if _before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = _before


def interpreted() -> bool:
    return "rnnbench.ops.common" in sys.modules and sys.modules["rnnbench.ops.common"].INTERPRET


@pytest.fixture
def interpreter(monkeypatch):
    """Skip unless the kernels are interpreted; sets TRITON_INTERPRET=1 for the test (the lane
    reads it to offer the CPU)."""
    if not interpreted():
        pytest.skip("the kernels were compiled for the GPU in this process; run the interpreter tests "
                    "with TRITON_INTERPRET=1 in a process of their own")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
