"""benchmarks/speed_map.py: ours against torch-nn over a grid. Its table on rows written here, its
commands, its one-line refusals, and one tiny map run for real (the CPU under the interpreter)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from benchmark_helpers import assert_refused, run_benchmark

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("speed_map_script", ROOT / "benchmarks" / "speed_map.py")
speed_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(speed_map)

GRID = {"cells": ("gru",), "dtypes": ("bf16",), "hidden_sizes": (1024, 4096), "batch_sizes": (16, 1024)}


def _row(lane, mode, batch, hidden, status="ok", ms=1.0, message=""):
    return {"record": "result", "cell": "gru", "dtype": "bf16", "mode": mode, "batch_size": batch,
            "hidden_size": hidden, "lane": lane, "status": status, "ms_per_batch": ms, "message": message}


def test_the_table_divides_torch_nns_time_by_ours_and_marks_the_rest():
    refused = ("RuntimeError: rnnbench.nn.GRU(backend='triton') cannot run this call: 160 programs cannot all be "
               "resident")
    rows = [_row("triton", "forward", 16, 1024, ms=2.0), _row("torch-nn", "forward", 16, 1024, ms=5.0),
            _row("triton", "forward", 1024, 1024, ms=4.0), _row("torch-nn", "forward", 1024, 1024, ms=3.0),
            _row("triton", "forward", 16, 4096, "error", message="OutOfResources: shared memory"),
            _row("torch-nn", "forward", 16, 4096),
            _row("triton", "forward", 1024, 4096, "error", message=refused),
            _row("torch-nn", "forward", 1024, 4096),
            _row("triton", "train", 16, 1024, ms=9.0), _row("torch-nn", "train", 16, 1024, ms=9.5),
            _row("triton", "train", 16, 1024, ms=10.0),  # (run again: the latest counts)
            _row("triton", "train", 1024, 4096, "too_large", message="needs about 50.1 GiB")]
    lines = speed_map.table(rows, GRID)
    forward = lines[lines.index("**gru bf16 forward** (torch-nn's time / ours)") + 4:][:2]
    assert forward == ["| 16 | **2.50** | FAIL |", "| 1024 | 0.75 | cuDNN |"], forward
    train = lines[lines.index("**gru bf16 train** (torch-nn's time / ours)") + 4:][:2]
    assert train == ["| 16 | 0.95 | · |", "| 1024 | · | too_large |"], train
    assert lines[0].startswith("Ours faster than torch-nn in 1 of 3 timed cells, at least 0.9x as fast in 2 "), lines[0]


def test_the_timed_run_holds_both_lanes_and_the_warm_run_ours_alone(tmp_path):
    timed = speed_map.command(GRID, tmp_path / "map.jsonl")
    flags = dict(zip(timed[4::2], timed[5::2]))
    assert flags["--lanes"] == "triton,torch-nn" and flags["--batch-size"] == "16,1024"
    assert flags["--input-size"] == "hidden" and flags["--seq-len"] == str(speed_map.SEQ_LEN)
    assert timed[-1] == "--resume", "a map stopped at its deadline goes on where it stopped"
    piece = {"name": "gru-bf16-H4096", "cell": "gru", "dtype": "bf16", "hidden_size": 4096}
    warm = speed_map.warm_command(piece, GRID, tmp_path)
    flags = dict(zip(warm[4::2], warm[5::2]))
    assert flags["--lanes"] == "triton" and flags["--hidden-size"] == "4096" and flags["--batch-size"] == "16,1024"
    assert flags["--out"] == str(tmp_path / "gru-bf16-H4096.jsonl") and "--resume" not in warm


def test_the_table_alone_reads_a_kept_map(tmp_path):
    rows = [_row("triton", "forward", 16, 1024, ms=2.0), _row("torch-nn", "forward", 16, 1024, ms=3.0)]
    with gzip.open(tmp_path / "map.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows) + '{"record": "res')  # (a torn last line)
    proc = run_benchmark("speed_map.py", str(tmp_path), "--table", "--cells", "gru", "--dtypes", "bf16",
                         "--hidden-sizes", "1024", "--batch-sizes", "16")
    assert proc.returncode == 0, proc.stderr
    assert "| 16 | **1.50** |" in proc.stdout and (tmp_path / "map.md").read_text() == proc.stdout


def test_a_kept_map_that_is_not_whole_gzip_is_refused_in_one_line(tmp_path):
    (tmp_path / "map.jsonl.gz").write_bytes(b"not gzip")
    assert_refused(run_benchmark("speed_map.py", str(tmp_path), "--table"), "cannot be read as gzip")


@pytest.mark.parametrize("args, message", [
    ((), "usage: speed_map.py OUT"),
    (("out", "--budget", "-1"), "--budget takes a positive number"),
    (("out", "--dtypes", "fp64"), "speed_map.py: unknown dtypes 'fp64'"),
    (("out", "--hidden-sizes", "x"), "speed_map.py: --hidden-sizes takes positive whole numbers"),
    (("nowhere", "--table"), "speed_map.py: no map.jsonl in nowhere")])
def test_bad_arguments_get_one_line_and_exit_2(args, message):
    assert_refused(run_benchmark("speed_map.py", *args), message)


@pytest.mark.usefixtures("interpreter")
def test_a_tiny_map_runs_through_the_engine(tmp_path):
    proc = run_benchmark("speed_map.py", str(tmp_path), "--cells", "rnn_tanh", "--dtypes", "fp32", "--hidden-sizes",
                         "3", "--batch-sizes", "2", "--budget", "0.01", interpret=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "map.jsonl").read_text().splitlines()]
    timed = {(r["lane"], r["mode"]): r["status"] for r in rows if r["record"] == "result"}
    assert timed == {(lane, mode): "ok" for lane in ("triton", "torch-nn") for mode in ("forward", "train")}, timed
    assert "| 2 | " in proc.stdout and "timed cells" in proc.stdout
    assert "| rnn_tanh | fp32 | train | 1 | 0 | 0 | 0 | 0 | 0 |" in (tmp_path / "warm" / "summary.md").read_text()
