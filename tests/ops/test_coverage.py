"""benchmarks/coverage.py: the triton lane over a grid of sizes through the engine. Its counting on
rows written here, its one-line refusals, and one small slice run for real (the CPU under the
interpreter, in processes of their own)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from benchmark_helpers import assert_refused, run_benchmark

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("coverage_script", ROOT / "benchmarks" / "coverage.py")
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

GRID = {"cells": ("lstm",), "dtypes": ("bf16",), "hidden_sizes": (650,), "batch_sizes": (128, 1024)}


def _row(mode, batch, status, message=""):
    return {"record": "result", "cell": "lstm", "dtype": "bf16", "mode": mode, "batch_size": batch,
            "hidden_size": 650, "status": status, "message": message}


def test_a_crash_is_failed_a_refusal_is_not_and_the_latest_row_counts():
    refused = ("RuntimeError: rnnbench.nn.LSTM(backend='triton') cannot run this call: 160 programs cannot all be "
               "resident")
    crash = "OutOfResources: out of resource: shared memory, Required: 294912, Hardware limit: 232448."
    rows = [_row("forward", 128, "ok"), _row("forward", 1024, "error", crash), _row("train", 1024, "error", refused),
            _row("train", 128, "error", crash), _row("train", 128, "ok")]  # (run again: ok now)
    lines, clean = coverage.summary(rows, GRID)
    assert not clean
    counts = {line.split(" | ")[2]: line for line in lines if line.startswith("| lstm")}
    # ok, refused, failed, mismatch, oom, not_run, missing
    assert counts["forward"].endswith("| 1 | 0 | 1 | 0 | 0 | 0 | 0 |"), counts
    assert counts["train"].endswith("| 1 | 1 | 0 | 0 | 0 | 0 | 0 |"), counts
    assert "1 rows failed or mismatched:" in lines
    assert [line for line in lines if line.startswith("- ")] == [
        f"- lstm bf16 forward batch 1024 hidden 650: error: {crash}"]


def test_rows_not_reached_are_missing_and_a_mismatch_is_not_clean():
    lines, clean = coverage.summary([_row("forward", 128, "mismatch", "output relative error 0.5 > tolerance")], GRID)
    assert not clean
    assert any(line.startswith("| lstm | bf16 | forward |") and line.endswith("| 0 | 0 | 0 | 1 | 0 | 0 | 1 |")
               for line in lines), lines
    assert any(line.startswith("| lstm | bf16 | train |") and line.endswith("| 0 | 0 | 0 | 0 | 0 | 0 | 2 |")
               for line in lines), lines
    assert coverage.summary([_row(m, b, "ok") for m in ("forward", "train") for b in (128, 1024)], GRID)[1]


def test_a_row_the_engine_did_not_attempt_is_not_run_not_failed():
    """``too_large`` (the memory free) and ``unavailable`` rows say nothing of the kernels: counted
    apart, and the grid still clean."""
    rows = [_row("forward", 128, "ok"), _row("forward", 1024, "too_large", "needs about 50.1 GiB"),
            _row("train", 128, "unavailable", "needs a CUDA device"), _row("train", 1024, "ok")]
    lines, clean = coverage.summary(rows, GRID)
    assert clean and "0 rows failed or mismatched." in lines, lines
    counts = {line.split(" | ")[2]: line for line in lines if line.startswith("| lstm")}
    assert counts["forward"].endswith("| 1 | 0 | 0 | 0 | 0 | 1 | 0 |"), counts
    assert counts["train"].endswith("| 1 | 0 | 0 | 0 | 0 | 1 | 0 |"), counts


def test_each_slice_runs_its_sizes_on_the_triton_lane_alone(tmp_path):
    pieces = coverage.slices({**GRID, "hidden_sizes": (37, 650), "dtypes": ("bf16", "fp32")})
    assert [p["hidden_size"] for p in pieces] == [650, 650, 37, 37]  # (widest first)
    cmd = coverage.command(pieces[0], GRID, tmp_path)
    flags = dict(zip(cmd[4::2], cmd[5::2]))
    assert cmd[2:4] == ["rnnbench", "run"]
    assert flags["--lanes"] == "triton" and flags["--batch-size"] == "128,1024" and flags["--hidden-size"] == "650"
    assert flags["--out"] == str(tmp_path / "lstm-bf16-H650.jsonl") and flags["--mode"] == "forward,train"


@pytest.mark.parametrize("args, message", [
    ((), "usage: coverage.py OUT"),
    (("out", "--jobs", "0"), "--jobs takes a positive number"),
    (("out", "--deadline"), "--deadline takes a value"),
    (("out", "--cells", "lstm,nope"), "unknown cells 'nope'"),
    (("out", "--batch-sizes", "0"), "--batch-sizes takes positive whole numbers"),
    (("out", "other"), "usage: coverage.py OUT")])
def test_bad_arguments_get_one_line_and_exit_2(args, message):
    assert_refused(run_benchmark("coverage.py", *args), message)


@pytest.mark.usefixtures("interpreter")
def test_one_slice_runs_through_the_engine(tmp_path):
    proc = run_benchmark("coverage.py", str(tmp_path), "--quick", "--cells", "rnn_tanh", "--hidden-sizes", "3",
                         "--batch-sizes", "3", interpret=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| rnn_tanh | fp32 | forward | 1 | 0 | 0 | 0 | 0 | 0 |" in proc.stdout
    assert "| rnn_tanh | fp32 | train | 1 | 0 | 0 | 0 | 0 | 0 |" in proc.stdout
    assert (tmp_path / "summary.md").read_text().splitlines() == proc.stdout.splitlines()
    rows = [json.loads(line) for line in (tmp_path / "rnn_tanh-fp32-H3.jsonl").read_text().splitlines()]
    assert {r["lane"] for r in rows if r["record"] == "result"} == {"triton"}
