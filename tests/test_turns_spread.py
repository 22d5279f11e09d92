"""benchmarks/turns_spread.py: the run-to-run spread of one lane's ratio to another, by turns,
from real results files of the engine (small CPU runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rnnbench import runner
from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.results import ResultsFile

ROOT = Path(__file__).resolve().parents[1]
CASE = Case(cell="gru", batch_size=2, seq_len=3, input_size=4, hidden_size=5, mode="forward")
LANE_NAMES = ("torch-nn", "torch-fused-loop")


def _spread(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "turns_spread.py"), *args], env=env,
                          capture_output=True, text=True, timeout=120)


def _one_run(path: Path, turns: int) -> float:
    """A run of CASE on both lanes; torch-nn ms / torch-fused-loop ms as its rows say."""
    rows = runner.run([CASE], [LANES[n] for n in LANE_NAMES], ResultsFile(path), budget_s=0.01, turns=turns)
    assert [r["status"] for r in rows] == ["ok", "ok"] and rows[0]["turns"] == turns
    return rows[0]["ms_per_batch"] / rows[1]["ms_per_batch"]


def test_spread_per_case_and_turns(tmp_path):
    one = [_one_run(tmp_path / f"one-{i}.jsonl", 1) for i in range(2)]
    three = _one_run(tmp_path / "three.jsonl", 3)
    proc = _spread("--lane", "torch-fused-loop", *map(str, sorted(tmp_path.glob("*.jsonl"))))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"| {CASE.key}")]
    by_turns = {int(line.split("|")[2]): [cell.strip() for cell in line.split("|")[3:6]] for line in lines}
    assert sorted(by_turns) == [1, 3]
    assert by_turns[1] == ["2", " ".join(f"{v:.2f}" for v in sorted(one)), f"{max(one) / min(one):.2f}"]
    assert by_turns[3] == ["1", f"{three:.2f}", "1.00"]


def test_bad_input_is_one_line(tmp_path):
    proc = _spread("--lane", "triton", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "no such results file" in proc.stderr
    _one_run(tmp_path / "r.jsonl", 1)
    proc = _spread("--lane", "triton", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2 and "no case has ok rows of both triton and torch-nn" in proc.stderr
