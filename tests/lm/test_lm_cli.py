"""``rnnbench lm`` as a user runs it: bad output paths and impossible sizes are refused before any
work, in one line on stderr with exit code 2 and no traceback; a foreign --out is left untouched.

One case runs as a real process (the truth about tracebacks and start-up time); the others call
the same ``main()`` in this process, with corpus loading made to fail the test if it is reached:
the checks must come before any work.
"""

from __future__ import annotations

import errno
import gzip
import time

import pytest

from cli_helpers import assert_one_line_error, run_main
from rnnbench.results import read_records


TINY = ["--emb-size", "16", "--hidden-size", "16", "--batch-size", "8", "--bptt", "16", "--device", "cpu",
        "--no-progress"]


@pytest.fixture
def no_work(monkeypatch):
    """Loading the corpus (the first work) fails the test: every check must come before it."""
    from rnnbench.lm import cli as lm_cli

    def work_started(*args, **kwargs):
        raise AssertionError("the corpus was loaded before the output paths were checked")

    monkeypatch.setattr(lm_cli, "load_corpus", work_started)


@pytest.fixture(autouse=True)
def fake_env(monkeypatch):
    import rnnbench.env

    monkeypatch.setattr(rnnbench.env, "environment", lambda: {"env_id": "cli-env", "gpu": None})


def test_checkpoint_directory_is_refused_at_once_in_a_real_process(word_dir, tmp_path, cli):
    """Found after a whole epoch with a traceback and a stray .tmp before: now before any work."""
    folder = tmp_path / "ckpts"
    folder.mkdir()
    started = time.perf_counter()
    proc = cli("lm", "--data-dir", word_dir, *TINY, "--out", tmp_path / "o.jsonl", "--checkpoint", folder,
               cwd=tmp_path)
    assert_one_line_error(proc, "--checkpoint", str(folder), "directory")
    assert time.perf_counter() - started < 10  # torch's import included; no epoch was trained
    assert list(folder.iterdir()) == [] and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("kind", ["directory", "dev-null", "proc", "under-a-file"])
def test_bad_checkpoint_paths_are_refused_before_any_work(monkeypatch, capsys, no_work, word_dir, tmp_path, kind):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    (tmp_path / "dir").mkdir()
    path, words = {"directory": (tmp_path / "dir", [str(tmp_path / "dir"), "directory"]),
                   "dev-null": ("/dev/null", ["/dev/null", "not a regular file"]),
                   "proc": ("/proc/x", ["/proc/x", "kernel file system"]),
                   "under-a-file": (tmp_path / "notes.txt" / "lm.pt",
                                    [f"cannot write in {tmp_path / 'notes.txt'}"])}[kind]
    started = time.perf_counter()
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--out", tmp_path / "o.jsonl",
                    "--checkpoint", path)
    assert_one_line_error(proc, "--checkpoint", *words)
    assert time.perf_counter() - started < 2
    assert not (tmp_path / "o.jsonl").exists() and not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("kind", ["directory", "dev-null", "same-as-checkpoint"])
def test_bad_out_paths_are_refused_before_any_work(monkeypatch, capsys, no_work, word_dir, tmp_path, kind):
    path, extra, words = {"directory": (tmp_path, [], ["--out", "directory"]),
                          "dev-null": ("/dev/null", [], ["--out", "not a regular file"]),
                          "same-as-checkpoint": (tmp_path / "x", ["--checkpoint", tmp_path / "x"],
                                                 ["--checkpoint", "--out", "same file"])}[kind]
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--out", path, *extra)
    assert_one_line_error(proc, *words)


def test_out_gz_is_refused_before_any_work(monkeypatch, capsys, no_work, word_dir, tmp_path):
    out = tmp_path / "new" / "lm.jsonl.gz"
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--out", out)
    assert_one_line_error(proc, f"--out {out}", "not gzip")
    assert not (tmp_path / "new").exists()


def test_out_gz_is_refused_on_the_ranks_that_do_not_write(tmp_path):
    from rnnbench.errors import UsageError
    from rnnbench.lm.cli import check_outputs

    with pytest.raises(UsageError, match="not gzip"):
        check_outputs(tmp_path / "lm.jsonl.gz", None, False, writes=False)


def test_report_reads_gzipped_lm_rows_as_the_plain_ones(monkeypatch, capsys, word_dir, tmp_path):
    out = tmp_path / "lm.jsonl"
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--max-steps", "2", "--out", out)
    assert proc.returncode == 0, proc.stderr
    gz = tmp_path / "lm.jsonl.gz"
    gz.write_bytes(gzip.compress(out.read_bytes()))
    plain = run_main(monkeypatch, capsys, "report", out)
    packed = run_main(monkeypatch, capsys, "report", gz)
    assert plain.returncode == packed.returncode == 0, packed.stderr
    assert "Language model" in plain.stdout and packed.stdout == plain.stdout


@pytest.mark.parametrize("content", [b"my notes\nsecond line\n", b"\x89PNG\r\n\x1a\n\x00\x00binary",
                                     b'{"record": "result", "lane": "torch-nn"}\n'],
                         ids=["text", "png", "micro-benchmark-results"])
def test_out_that_is_not_an_lm_results_file_is_refused_untouched(monkeypatch, capsys, no_work, word_dir,
                                                                   tmp_path, content):
    out = tmp_path / "o.jsonl"
    out.write_bytes(content)
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--out", out)
    assert_one_line_error(proc, str(out), "left untouched")
    assert out.read_bytes() == content


def test_a_checkpoint_write_that_fails_mid_run_is_one_line_and_leaves_no_tmp(monkeypatch, capsys, word_dir,
                                                                            tmp_path):
    """A disk that fills up after the checks: exit 1, one line, the row kept, no stray .tmp."""
    import torch

    def disk_full(state, f, *args, **kwargs):
        with open(f, "wb") as half:
            half.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    out, ckpt = tmp_path / "o.jsonl", tmp_path / "lm.pt"
    proc = run_main(monkeypatch, capsys, "lm", "--data-dir", word_dir, *TINY, "--max-steps", "2", "--out", out,
                    "--checkpoint", ckpt)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert f"cannot write checkpoint {ckpt}" in proc.stderr and "No space left" in proc.stderr
    assert [r["epoch"] for r in read_records(out, "lm")] == [1]
    assert not ckpt.exists() and not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("option, value", [("--hidden-size", "200000"), ("--num-layers", "100000")])
def test_a_model_too_big_for_memory_is_refused_at_once(word_dir, tmp_path, cli, option, value):
    """Issue 6: these used to allocate (or hang) for up to a minute, then print a traceback."""
    started = time.perf_counter()
    proc = cli("lm", "--data-dir", word_dir, "--device", "cpu", "--out", tmp_path / "o.jsonl", option, value,
               cwd=tmp_path)
    assert_one_line_error(proc, "needs about", "GiB", "available", option)
    assert time.perf_counter() - started < 10  # torch's import included
    assert not (tmp_path / "o.jsonl").exists()


def test_only_the_writing_rank_mends_a_torn_results_file(tmp_path):
    """Every rank checks the output paths; only the rank that writes rows (rank 0) opens the
    results file, which cuts a torn last line. The other ranks leave the file as it is, and still
    refuse a bad path in one line."""
    from rnnbench.errors import UsageError
    from rnnbench.lm.cli import check_outputs

    out = tmp_path / "lm.jsonl"
    torn = b'{"record": "lm", "epoch": 1}\n{"record": "lm", "ep'
    out.write_bytes(torn)
    results, _ = check_outputs(out, None, False, writes=False)
    assert results is None and out.read_bytes() == torn
    results, _ = check_outputs(out, None, False, writes=True)
    assert results is not None and out.read_bytes() == b'{"record": "lm", "epoch": 1}\n'
    with pytest.raises(UsageError, match="is a directory"):
        check_outputs(tmp_path, None, False, writes=False)
    with pytest.raises(UsageError, match="same file"):
        check_outputs(out, out, False, writes=False)
