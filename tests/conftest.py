"""Shared helpers for the micro-benchmark tests (the LM tests under tests/lm keep their own).

- ``temp_lane``: register a throw-away :class:`~rnnbench.lanes.registry.Lane`, removed afterwards.
- ``small_run``: one real, CPU-sized run of the ``quick`` suite (two cases, three lanes), made
  once per session and shared read-only by the runner, results and report tests.
- ``cli``: run ``python -m rnnbench ...`` in a subprocess, the way a user does (``main()`` turns
  errors into one line on stderr, so the subprocess is the truth, not an in-process runner).

Tests here run torch on one intra-op thread: the tensors are tiny, and with two OpenMP threads on a
two-core machine that has any other load (a second process, pytest's own subprocesses) small ops
slow down 30-50x from oversubscription, which turns a 2-second module into a minute.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

# Our Triton kernels, interpreted on CPU tensors unless this process compiles them for a GPU: whether
# a kernel is interpreted is fixed when its module is imported, so they are imported here, before any
# test module, with TRITON_INTERPRET=1 for that import only (see tests/ops/conftest.py).
if (importlib.util.find_spec("triton") is not None and "rnnbench.ops.common" not in sys.modules
        and not torch.cuda.is_available()):
    _before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import rnnbench.ops.recurrence  # noqa: F401, E402  (the kernels become interpreted functions)
    finally:
        if _before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = _before

from rnnbench import runner  # noqa: E402
from rnnbench.lanes import LANES
from rnnbench.lanes.registry import Lane, register
from rnnbench.results import ResultsFile
from rnnbench.suites import suite_cases

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


@contextlib.contextmanager
def one_torch_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@pytest.fixture(autouse=True)
def _one_torch_thread(request):
    """One intra-op thread for every test of the micro-benchmark (tests/lm decides for itself)."""
    if TESTS / "lm" in Path(str(request.node.fspath)).parents:
        yield
        return
    with one_torch_thread():
        yield


@pytest.fixture
def temp_lane():
    """``temp_lane(name, build, **lane_fields) -> Lane``: registered in ``LANES`` for the test,
    removed (with any other lane it registered) at teardown even if the test fails."""
    added: list[str] = []

    def make(name: str, build, **fields) -> Lane:
        lane = register(Lane(name, f"test lane {name}", build, **fields))
        added.append(name)
        return lane

    yield make
    for name in added:
        LANES.pop(name, None)


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    """The quick suite restricted to its two one-layer GRU cases (train and forward), lanes
    torch-nn, torch-cell-loop and torch-nn-graph (unavailable on the CPU), a short budget."""
    path = tmp_path_factory.mktemp("small_run") / "results.jsonl"
    cases = [c for c in suite_cases("quick", "cpu") if c.cell == "gru" and c.num_layers == 1]
    lanes = [LANES["torch-nn"], LANES["torch-cell-loop"], LANES["torch-nn-graph"]]
    started = []
    with one_torch_thread():
        rows = runner.run(cases, lanes, ResultsFile(path), budget_s=0.02,
                          on_start=lambda case, lane: started.append((case.key, lane.name)))
    return SimpleNamespace(path=path, cases=cases, lanes=lanes, rows=rows, started=started)


def _cli_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "COLUMNS": "200", "NO_COLOR": "1", "PYTHONUTF8": "1", "PYTHONUNBUFFERED": "1"}


def _cli(*args, cwd: str | os.PathLike | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rnnbench", *map(str, args)], cwd=cwd, env=_cli_env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cli():
    """``cli(*args, cwd=None) -> CompletedProcess`` of ``python -m rnnbench *args``."""
    return _cli


@pytest.fixture(scope="session")
def cli_env():
    """The environment ``cli`` runs the command in (for tests that need ``subprocess.Popen``)."""
    return _cli_env()


@pytest.fixture
def cuda_oom():
    """A ``torch.cuda.OutOfMemoryError`` as the CUDA caching allocator words it."""
    return torch.cuda.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.19 GiB\n"
        "Of the allocated memory ...")


@pytest.fixture
def nan_buffers(monkeypatch):
    """Every float tensor made by ``torch.empty`` during the test starts as NaN, so a kernel that
    reads memory it has not written (a padding its rows should hold as zeros) shows in the result."""
    empty = torch.empty

    def nan_empty(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(torch, "empty", nan_empty)
