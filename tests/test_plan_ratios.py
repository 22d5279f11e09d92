"""benchmarks/plan_ratios.py: two plans of a plan_sweep file side by side, on rows written here
with known times, and its one-line refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ratios(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plan_ratios.py"), *args], capture_output=True,
                          text=True, timeout=60)


def _row(cell, batch, hidden, plan, forward_us, backward_us):
    return {"cell": cell, "batch_size": batch, "hidden_size": hidden, "dtype": "bf16", "plan": plan,
            "forward_us_per_step": forward_us, "backward_us_per_step": backward_us}


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in [{"record": "env", "gpu": "none"}, *rows]))
    return str(path)


def test_each_shape_gets_b_over_a_and_each_way_its_range(tmp_path):
    path = _write(tmp_path / "sweep.jsonl", [
        _row("lstm", 128, 650, "default", 8.0, 16.0), _row("lstm", 128, 650, "pad=True", 4.0, 12.0),
        _row("gru", 20, 1500, "default", 5.0, 10.0), _row("gru", 20, 1500, "pad=True", 6.0, 10.0),
        _row("gru", 32, 640, "default", 3.0, 9.0)])  # (a shape without B: left out)
    proc = _ratios(path, "default", "pad=True")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == 4
    assert out[0].startswith("lstm  bf16  batch 128  hidden 650")
    assert "forward µs a step  8.00 ->  4.00 (0.50x)" in out[0] and "backward µs a step 16.00 -> 12.00 (0.75x)" in out[0]
    assert "forward µs a step  5.00 ->  6.00 (1.20x)" in out[1] and "(1.00x)" in out[1]
    assert out[2:] == ["2 shapes, forward: a step 0.50-1.20x", "2 shapes, backward: a step 0.75-1.00x"]
    # the other way round, the shape without B is one without A
    lone = _ratios(path, "pad=True", "default")
    assert lone.returncode == 2 and "for gru bf16 batch 32 hidden 640" in lone.stderr


def test_a_plan_that_failed_is_named_and_left_out_of_the_ranges(tmp_path):
    failed = {**_row("lstm", 128, 4096, "default", 0, 0), "error": "OutOfResources: shared memory\nmore"}
    del failed["forward_us_per_step"], failed["backward_us_per_step"]  # (as plan_sweep.py writes it)
    path = _write(tmp_path / "sweep.jsonl", [
        failed, _row("lstm", 128, 4096, "gs=True", 30.0, 50.0),
        _row("lstm", 20, 4096, "default", 35.0, 59.0), _row("lstm", 20, 4096, "gs=True", 35.0, 48.0)])
    proc = _ratios(path, "default", "gs=True")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("lstm  bf16  batch 128  hidden 4096") and out[0].endswith(
        "A failed: OutOfResources: shared memory")
    assert "(0.81x)" in out[1]
    assert out[2:] == ["1 shapes, forward: a step 1.00-1.00x", "1 shapes, backward: a step 0.81-0.81x"]
    only_failed = _write(tmp_path / "failed.jsonl", [failed, _row("lstm", 128, 4096, "gs=True", 30.0, 50.0)])
    proc = _ratios(only_failed, "default", "gs=True")
    assert proc.returncode == 0 and proc.stdout.splitlines()[1:] == ["0 shapes, forward", "0 shapes, backward"]


@pytest.mark.parametrize("rows, args, message", [
    ([_row("lstm", 128, 650, "pad=True", 4.0, 12.0)], ("default", "pad=True"),
     "no row with plan 'default' for lstm bf16 batch 128 hidden 650"),
    ([_row("lstm", 128, 650, "default", 4.0, 12.0)], ("default", "nope"), "no pair of plans 'default' and 'nope'"),
    (None, ("default", "pad=True"), "cannot read"),
])
def test_a_file_without_the_pairs_is_refused_in_one_line(tmp_path, rows, args, message):
    path = _write(tmp_path / "sweep.jsonl", rows) if rows is not None else str(tmp_path / "missing.jsonl")
    proc = _ratios(path, *args)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_wrong_arguments_print_the_usage_in_one_line():
    proc = _ratios("only-one")
    assert proc.returncode == 2 and proc.stderr.strip() == "usage: plan_ratios.py FILE PLAN_A PLAN_B"
