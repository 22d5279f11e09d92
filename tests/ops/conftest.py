"""The kernels under Triton's interpreter, on CPU tensors, unless this process already compiled
them for a GPU.

Whether a Triton kernel is interpreted is fixed when its module is imported, so the kernels are
imported by ``tests/conftest.py`` (before any test module) with ``TRITON_INTERPRET=1`` set just for
that import (restored afterwards, so
subprocesses of other tests, e.g. the CLI's, see the environment they had). On a CUDA machine the
variable is not set here: there the real kernels are compiled and the interpreter tests skip;
run them in a process of their own with ``TRITON_INTERPRET=1 pytest tests/ops tests/test_nn.py``.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest


def interpreted() -> bool:
    return "rnnbench.ops.common" in sys.modules and sys.modules["rnnbench.ops.common"].INTERPRET


@pytest.fixture
def interpreter(monkeypatch):
    """Skip unless the kernels are interpreted; sets TRITON_INTERPRET=1 for the test (the lane
    reads it to offer the CPU)."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("Triton is not installed")
    if not interpreted():
        pytest.skip("the kernels were compiled for the GPU in this process; run the interpreter tests "
                    "with TRITON_INTERPRET=1 in a process of their own")
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture
def concurrent_programs(interpreter, monkeypatch):
    """Run every program of a launch in its own thread, side by side, so that programs waiting for
    each other at the grid barrier make progress under the interpreter: the multi-program logic
    (hidden slices, the exchange through memory, barrier targets) checked on the CPU.

    The interpreter calls the kernel once per program after setting a global program id; here
    those calls are collected and, at the last one, run in threads, each with its own id.
    """
    import inspect
    import math
    import threading

    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as ti

    from rnnbench.ops import plans

    builder = ti.interpreter_builder
    local = threading.local()

    def program_id(axis):
        return ti.TensorHandle(np.array([local.idx[axis]], dtype=np.int32), tl.int32)

    class Concurrent:
        def __init__(self, fn):
            self.fn, self.pending = fn, []
            # What the interpreter reads off the kernel function besides calling it.
            self.__globals__, self.__signature__ = fn.__globals__, inspect.signature(fn)
            self.__name__ = fn.__name__

        def __call__(self, **args):
            self.pending.append((tuple(builder.grid_idx), args))
            if len(self.pending) < math.prod(builder.grid_dim):
                return
            programs, self.pending, errors = self.pending, [], []

            def run(idx, args):
                local.idx = idx
                try:
                    self.fn(**args)
                except BaseException as exc:  # reported by the launching thread
                    errors.append(exc)

            threads = [threading.Thread(target=run, args=p, daemon=True) for p in programs]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            if errors:
                raise errors[0]
            if any(t.is_alive() for t in threads):
                raise RuntimeError("programs still waiting at the grid barrier after 120 s: deadlock")

    original_init = ti.GridExecutor.__init__

    def init(self, fn, *rest, **kw):
        original_init(self, fn, *rest, **kw)
        self.fn = Concurrent(self.fn)

    monkeypatch.setattr(ti.GridExecutor, "__init__", init)
    monkeypatch.setattr(builder, "create_get_program_id", program_id)
    monkeypatch.setattr(plans, "INTERPRETER_PROGRAMS_CONCURRENT", True)
