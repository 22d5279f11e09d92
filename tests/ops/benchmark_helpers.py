"""What the tests of ``benchmarks/*.py`` share: a script run in a process of its own, and the
one-line refusal check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, *args: str, interpret: bool = False) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> ARGS`` with the checkout's ``src`` on the path (and
    ``TRITON_INTERPRET=1``: the kernels on the CPU)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], env=env, capture_output=True,
                          text=True, timeout=600)


def assert_refused(proc: subprocess.CompletedProcess, message: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr holding ``message``."""
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
