"""Data-parallel ``rnnbench lm``: two gloo processes on the CPU, started by torchrun itself and by
``--nproc 2`` (torch's elastic launcher, as torchrun), checked against one process on the same
global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cli_helpers import assert_one_line_error, run_main

SRC = Path(__file__).resolve().parents[2] / "src"
# A tiny model; 4 global streams, 2 per process; --max-steps 4 stops inside the first epoch.
ARGS = ["--device", "cpu", "--emb-size", "16", "--hidden-size", "16", "--batch-size", "4", "--bptt", "8",
        "--epochs", "2", "--lr", "0.01", "--no-progress"]


TORCHRUN = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]


def lm_process(data_dir: Path, *args: str, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python [LAUNCHER] -m rnnbench lm`` in a fresh process (``--nproc`` starts its workers the
    same way)."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, *launcher, "-m", "rnnbench", "lm", "--data-dir", str(data_dir), *ARGS, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)


def lm_rows(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("record") == "lm"]


def test_two_processes_train_as_one_process_on_the_global_batch(word_dir, tmp_path):
    """Under torchrun, DDP averages the two halves' gradients: the run is the one-process run of
    the same global batch, so losses, perplexities and the carried state agree; the halves of the
    state differ (each rank read its own streams), and only rank 0 wrote (one row per epoch, one
    checkpoint)."""
    two = lm_process(word_dir, "--dropout", "0", "--max-steps", "4", "--out", str(tmp_path / "two.jsonl"),
                     "--checkpoint", str(tmp_path / "two.pt"), launcher=TORCHRUN)
    assert two.returncode == 0, two.stderr
    one = lm_process(word_dir, "--dropout", "0", "--max-steps", "4",
                     "--out", str(tmp_path / "one.jsonl"), "--checkpoint", str(tmp_path / "one.pt"))
    assert one.returncode == 0, one.stderr

    [row2], [row1] = lm_rows(tmp_path / "two.jsonl"), lm_rows(tmp_path / "one.jsonl")
    assert (row2["world_size"], row2["batch_size"], row2["batch_size_per_rank"]) == (2, 4, 2)
    assert row2["train_wps_per_rank"] * 2 == pytest.approx(row2["train_wps"])
    for field in ("train_loss", "valid_loss", "test_loss"):
        assert row2[field] == pytest.approx(row1[field], rel=1e-5), field
    state2 = torch.load(tmp_path / "two.pt", weights_only=True)
    state1 = torch.load(tmp_path / "one.pt", weights_only=True)
    # After 4 SGD steps on averaged gradients, every parameter is the one-process run's.
    assert state2["model"].keys() == state1["model"].keys()
    for name, p2 in state2["model"].items():
        torch.testing.assert_close(p2, state1["model"][name], rtol=1e-4, atol=1e-6, msg=name)
    hidden2, hidden1 = state2["hidden"], state1["hidden"]
    for h2, h1 in zip(hidden2, hidden1):  # LSTM: (h, c), every stream's, [layers, 4, hidden]
        assert h2.shape == h1.shape == (1, 4, 16)
        torch.testing.assert_close(h2, h1, rtol=1e-4, atol=1e-5)
        assert not torch.allclose(h2[:, :2], h2[:, 2:], atol=1e-3)  # ranks 0 and 1 read other streams
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.jsonl", "one.pt", "two.jsonl", "two.pt", "words"]
    assert two.stdout.count("results: ") == 1 and two.stdout.count("epoch 1/2") == 1  # rank 0 alone prints


def test_a_two_process_run_resumes_where_it_stopped(word_dir, tmp_path):
    """Cut after 3 steps and resumed to 6, with dropout (each rank's random stream restored), it
    ends where an uninterrupted run ends; one process cannot resume its checkpoint."""
    common = ["--nproc", "2", "--dropout", "0.2"]
    checkpoint = str(tmp_path / "cut.pt")
    first = lm_process(word_dir, *common, "--max-steps", "3", "--out", str(tmp_path / "cut.jsonl"),
                       "--checkpoint", checkpoint)
    assert first.returncode == 0, first.stderr
    resumed = lm_process(word_dir, *common, "--max-steps", "6", "--out", str(tmp_path / "cut.jsonl"),
                         "--checkpoint", checkpoint, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    whole = lm_process(word_dir, *common, "--max-steps", "6", "--out", str(tmp_path / "whole.jsonl"))
    assert whole.returncode == 0, whole.stderr

    cut, uncut = lm_rows(tmp_path / "cut.jsonl"), lm_rows(tmp_path / "whole.jsonl")
    assert [r["global_step"] for r in cut] == [3, 6] and cut[0]["run_id"] == cut[1]["run_id"]
    assert cut[-1]["valid_loss"] == pytest.approx(uncut[-1]["valid_loss"], rel=1e-6)
    assert cut[-1]["test_loss"] == pytest.approx(uncut[-1]["test_loss"], rel=1e-6)

    one = lm_process(word_dir, "--dropout", "0.2", "--max-steps", "9", "--out", str(tmp_path / "one.jsonl"),
                     "--checkpoint", checkpoint, "--resume")
    assert_one_line_error(one, "written by a run on 2 process(es)", "--nproc 2")


@pytest.mark.parametrize("args, message", [
    (["--nproc", "0"], "--nproc must be at least 1"),
    (["--nproc", "3"], "--batch-size 4 does not divide among 3 processes"),
    (["--nproc", "2", "--eval-batch-size", "5"], "--eval-batch-size 5 does not divide among 2"),
])
def test_bad_process_counts_are_one_line(monkeypatch, capsys, word_dir, tmp_path, args, message):
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *ARGS, *args,
                    "--out", tmp_path / "x.jsonl")
    assert_one_line_error(proc, message)
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("visible, nproc", [(2, 3), (0, 2)])
def test_more_processes_than_cuda_devices_is_one_line(monkeypatch, capsys, word_dir, tmp_path, visible, nproc):
    """``--nproc 3`` with two GPUs, ``--nproc 2 --device cuda`` with none: refused before any
    worker starts (the CUDA count is faked, so this runs the same with or without GPUs)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: visible > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *ARGS, "--batch-size", "6",
                    "--device", "cuda", "--nproc", nproc, "--out", tmp_path / "x.jsonl")
    assert_one_line_error(proc, f"--nproc {nproc} needs {nproc} CUDA devices; {visible} visible")
    assert not (tmp_path / "x.jsonl").exists()


def test_nproc_under_torchrun_is_refused(monkeypatch, capsys, word_dir, tmp_path):
    monkeypatch.setenv("WORLD_SIZE", "2")  # what torchrun sets; rank 0 prints the error
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *ARGS, "--nproc", "2",
                    "--out", tmp_path / "x.jsonl")
    assert_one_line_error(proc, "under torchrun leave out --nproc")


def test_worker_arguments_drop_nproc():
    from rnnbench.lm.cli import worker_argv

    argv = ["rnnbench", "lm", "--nproc", "2", "--bptt", "8", "--nproc=2", "--out", "x.jsonl"]
    assert worker_argv(argv) == ["--bptt", "8", "--out", "x.jsonl"]


def _slowest_on_rank(rank: int, store_path: str, out_dir: str) -> None:
    """One of two gloo ranks: rank r holds speed 100·(r+1) words/s and 10·(r+1) ms per batch."""
    import torch.distributed as dist

    from rnnbench.lm.distributed import World
    from rnnbench.lm.loop import slowest

    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)
    try:
        wps, ms = slowest(100.0 * (rank + 1), 10.0 * (rank + 1), World(rank, rank, 2), torch.device("cpu"))
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps([wps, ms]))
    finally:
        dist.destroy_process_group()


def test_speeds_across_ranks_take_the_slowest_rank(tmp_path):
    """Every rank reports all ranks' words over the slowest rank's time (2 x the smaller speed)
    and the slowest rank's ms per batch (the larger), whichever rank asks."""
    import torch.multiprocessing as mp

    mp.start_processes(_slowest_on_rank, args=(str(tmp_path / "store"), str(tmp_path)), nprocs=2,
                       start_method="spawn")
    for rank in (0, 1):
        assert json.loads((tmp_path / f"rank{rank}.json").read_text()) == [200.0, 20.0]


def test_leaving_the_group_waits_for_every_rank_unless_an_error_propagates(monkeypatch):
    """``distributed.stop``: a barrier, then the teardown, after a run; after an error on this rank
    the teardown alone (the other ranks may never reach a barrier)."""
    from rnnbench.lm import distributed

    calls = []
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(distributed.dist, "barrier", lambda: calls.append("barrier"))
    monkeypatch.setattr(distributed.dist, "destroy_process_group", lambda: calls.append("destroy"))
    distributed.stop()
    assert calls == ["barrier", "destroy"]
    calls.clear()
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("a rank failed")
        finally:
            distributed.stop()
    assert calls == ["destroy"]
