"""`rnnbench run` and `list` as a user meets them: piped output keeps whole names and paths, the
results file given is never corrupted, and lists and resume options mean what they say."""

from __future__ import annotations

import gzip
import os
import sys

import pytest

from rnnbench.lanes import LANES
from rnnbench.results import read_records
from cli_helpers import assert_one_line_error, run_main
from test_cli import TINY

TINY_CPU = [*TINY, "--budget", "0.01", "--device", "cpu"]


def _piped_env(cli_env):
    """The user's environment when piping into grep: no COLUMNS (rich would then assume 80)."""
    return {k: v for k, v in cli_env.items() if k not in ("COLUMNS", "LINES")}


def test_piped_list_keeps_every_name_and_summary_whole(cli_env, tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "rnnbench", "list"], env=_piped_env(cli_env),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for lane in LANES.values():  # `rnnbench list | grep torch-cell-loop` must find the lane's line
        (line,) = [x for x in lines if f" {lane.name} " in x]
        assert lane.summary in line


def test_piped_run_keeps_a_long_path_whole(cli_env, tmp_path):
    import subprocess

    out = tmp_path / ("a-rather-long-folder-name-" * 4) / "results-with-a-long-name.jsonl"
    proc = subprocess.run([sys.executable, "-m", "rnnbench", "run", *TINY_CPU, "--lanes", "torch-nn", "--out", str(out)],
                          env=_piped_env(cli_env), capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"results: {out}" in proc.stdout.splitlines()
    assert "[1/1] gru-B2-T3-I4-H5-L1-fp32-train-all_steps-cpu torch-nn: ok" in proc.stdout


FOREIGN = {"text": b"my notes\nthe last line has no newline", "png": bytes.fromhex("89504e470d0a1a0a") + b"\x00IHDR"}


@pytest.mark.parametrize("kind", FOREIGN)
def test_run_out_on_a_foreign_file_is_refused_and_left_untouched(monkeypatch, capsys, tmp_path, kind):
    path = tmp_path / f"mine.{kind}"
    path.write_bytes(FOREIGN[kind])
    proc = run_main(monkeypatch, capsys, "run", *TINY_CPU, "--out", path)
    assert_one_line_error(proc, str(path), "not an rnnbench results file")
    assert path.read_bytes() == FOREIGN[kind]


@pytest.mark.parametrize("target, words", [("/dev/null", "not a regular file"), ("/dev/full", "not a regular file"),
                                           ("/proc/rnnbench.jsonl", "kernel file system")])
def test_run_out_that_cannot_hold_results(monkeypatch, capsys, target, words):
    if not os.path.exists(os.path.dirname(target)):
        pytest.skip(f"no {os.path.dirname(target)} here")
    assert_one_line_error(run_main(monkeypatch, capsys, "run", *TINY_CPU, "--out", target), target, words)


def test_run_out_gz_is_refused_and_nothing_is_made(monkeypatch, capsys, tmp_path):
    out = tmp_path / "new" / "r.jsonl.gz"
    proc = run_main(monkeypatch, capsys, "run", *TINY_CPU, "--lanes", "torch-nn", "--out", out)
    assert_one_line_error(proc, f"--out {out}", "not gzip")
    assert not (tmp_path / "new").exists()


def test_resume_on_a_gz_file_is_refused_and_leaves_it_untouched(monkeypatch, capsys, small_run, tmp_path):
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(small_run.path.read_bytes()))
    before = gz.read_bytes()
    proc = run_main(monkeypatch, capsys, "run", *TINY_CPU, "--lanes", "torch-nn", "--out", gz, "--resume")
    assert_one_line_error(proc, str(gz), "gunzip it first to --resume")
    assert gz.read_bytes() == before


@pytest.mark.parametrize("args, fragments", [
    (["--resume"], ["--resume needs --out"]),
    (["--retry-failed", "--out", "r.jsonl"], ["--retry-failed goes with --resume"]),
    (["--lanes", ""], ["--lanes is empty"]),
    (["--suite", ""], ["--suite is empty"]),
    (["--lanes", " , "], ["--lanes is empty"]),
])
def test_run_options_that_mean_nothing_are_refused(monkeypatch, capsys, tmp_path, args, fragments):
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(run_main(monkeypatch, capsys, "run", *TINY_CPU, *args), *fragments)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "r.jsonl").exists()


def test_duplicates_in_lists_are_measured_once(monkeypatch, capsys):
    proc = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--cell", "gru,gru",
                    "--batch-size", "4,4,8", "--mode", "train", "--lanes", "torch-nn,torch-nn")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 cases × 1 lanes"
    suites = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--suite", "quick,quick")
    assert suites.stdout.splitlines()[-1] == f"12 cases × {len(LANES)} lanes"


def test_resume_retry_failed_through_the_cli(monkeypatch, capsys, tmp_path):
    import json

    out = tmp_path / "r.jsonl"
    assert run_main(monkeypatch, capsys, "run", *TINY_CPU, "--lanes", "torch-nn", "--out", out).returncode == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    out.write_text("".join(json.dumps({**r, "status": "oom"} if r["record"] == "result" else r) + "\n" for r in lines))
    again = ["run", *TINY_CPU, "--lanes", "torch-nn", "--out", out, "--resume"]
    assert run_main(monkeypatch, capsys, *again).returncode == 0
    assert [r["status"] for r in read_records(out, "result")] == ["oom"]
    assert run_main(monkeypatch, capsys, *again, "--retry-failed").returncode == 0
    assert [r["status"] for r in read_records(out, "result")] == ["oom", "ok"]
