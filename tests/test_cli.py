"""The command line, run as a user runs it: ``python -m rnnbench ...`` in a subprocess.

Bad input must give exit code 2 and exactly one line on stderr, ``rnnbench: error: ...``, never a
traceback (``main()`` does that conversion, so a runner that bypasses it would not test it). The
main cases run as real processes; the long tail of bad inputs calls the same ``main()`` in this
process (importing torch in a fresh process costs ~1.5 s each).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from cli_helpers import assert_one_line_error, run_main
from rnnbench.lanes import LANES
from rnnbench.results import read_records
from rnnbench.suites import suite_cases

TINY = ["--cell", "gru", "--batch-size", "2", "--seq-len", "3", "--input-size", "4", "--hidden-size", "5", "--mode", "train"]


# Bad inputs run as real processes (started together).
BAD = {
    "run --batch-size x": (["run", "--batch-size", "x"], ["--batch-size takes whole numbers"]),
    "run --cell foo": (["run", "--cell", "foo"], ["unknown cell 'foo'"]),
    "run --bogus": (["run", "--bogus"], ["--bogus"]),
    "run --lanes nope": (["run", "--lanes", "nope"], ["unknown lane 'nope'"]),
    "run --dtype tf32 --device cpu": (["run", "--dtype", "tf32", "--device", "cpu"], ["tf32"]),
    "report missing.jsonl": (["report", "missing.jsonl"], ["no results file at missing.jsonl"]),
    "report notes.txt": (["report", "notes.txt"], ["notes.txt", "not a JSON line"]),
    "report partial.jsonl": (["report", "partial.jsonl"], ["partial.jsonl:2: result row has no field 'cell'"]),
}


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory, cli):
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "notes.txt").write_text("these are my notes\nnot JSON at all\n")
    # JSON lines that look like ours but lack most fields (hand-edited or written by another tool)
    (tmp / "partial.jsonl").write_text(
        '{"record": "env", "env_id": "e"}\n'
        '{"record": "result", "case_key": "x", "lane": "torch-nn", "env_id": "e", "status": "ok"}\n')
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(cli, *args, cwd=tmp) for name, (args, _) in BAD.items()}
        results = {name: f.result() for name, f in futures.items()}
    return tmp, results


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line_and_exit_2(bad_runs, name):
    tmp, results = bad_runs
    assert_one_line_error(results[name], *BAD[name][1])
    assert not (tmp / "runs").exists()  # nothing measured, nothing written


# More bad inputs through the same main() in this process (fast; the conversion to one line is
# main()'s, so an exception that escapes it is reported here as a traceback would be).

@pytest.mark.parametrize("args, fragments", [pytest.param(*p, id=" ".join(p[0]) or "no-args") for p in [
    (["run", "--batch-size", "0"], ["batch_size must be a positive integer"]),
    (["run", "--seq-len", "2.5"], ["--seq-len takes whole numbers"]),
    (["run", "--cell", ","], ["--cell is empty"]),
    (["run", "--mode", "backward", "--dry-run"], ["unknown mode 'backward'"]),
    (["run", "--baseline", "nope", "--dry-run"], ["unknown lane 'nope'"]),
    (["run", "--suite", "nope"], ["unknown suite 'nope'"]),
    (["run", "--suite", "quick", "--cell", "foo"], ["unknown cell 'foo'"]),
    (["run", "--device", "gpu"], ["unknown device 'gpu'"]),
    (["run", "--hidden-size", "1000000"], ["too large"]),
    (["run", "--budget", "0"], ["budget"]),
    (["run", "--turns", "0"], ["turns"]),
    (["report"], ["Missing argument"]),
    (["frobnicate"], ["frobnicate"]),
]])
def test_more_bad_input_in_process(monkeypatch, capsys, tmp_path, args, fragments):
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(run_main(monkeypatch, capsys, *args), *fragments)
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU answer")
def test_device_cuda_without_gpu(monkeypatch, capsys):
    assert_one_line_error(run_main(monkeypatch, capsys, "run", "--device", "cuda", "--dry-run"), "no CUDA device")


@pytest.mark.parametrize("content", ["%PDF-1.4 binary\x00junk\n{}\n", '{"a": 1}\n{"b": 2}\n', "", "just one line"],
                         ids=["binary", "json-not-records", "empty", "one-torn-line"])
def test_report_on_a_file_that_is_not_results(monkeypatch, capsys, tmp_path, content):
    path = tmp_path / "notes.txt"
    path.write_text(content)
    assert_one_line_error(run_main(monkeypatch, capsys, "report", path), str(path))


def test_report_unknown_format(monkeypatch, capsys, small_run):
    assert_one_line_error(run_main(monkeypatch, capsys, "report", small_run.path, "--format", "xml"),
                          "unknown format 'xml'")


def test_report_reads_a_gzipped_file_as_the_plain_one(monkeypatch, capsys, small_run, tmp_path):
    gz = tmp_path / "results.jsonl.gz"
    gz.write_bytes(gzip.compress(small_run.path.read_bytes()))
    plain = run_main(monkeypatch, capsys, "report", small_run.path)
    packed = run_main(monkeypatch, capsys, "report", gz)
    assert plain.returncode == packed.returncode == 0, packed.stderr
    assert "| gru " in plain.stdout and packed.stdout == plain.stdout


def test_report_on_a_gz_file_that_is_not_gzip(monkeypatch, capsys, tmp_path):
    path = tmp_path / "r.jsonl.gz"
    path.write_text('{"record": "env", "env_id": "e"}\n')  # named .gz, left uncompressed
    assert_one_line_error(run_main(monkeypatch, capsys, "report", path), str(path), "cannot be read as gzip")


def test_run_out_is_a_directory(monkeypatch, capsys, tmp_path):
    """Found while writing these tests: this used to escape as an IsADirectoryError traceback."""
    assert_one_line_error(run_main(monkeypatch, capsys, "run", *TINY, "--lanes", "torch-nn", "--budget", "0.01",
                                   "--device", "cpu", "--out", tmp_path), str(tmp_path), "directory")


def test_report_plot_without_ok_rows(monkeypatch, capsys, tmp_path):
    """Found while writing these tests: this used to die with a KeyError traceback in report.plot."""
    out = tmp_path / "r.jsonl"
    proc = run_main(monkeypatch, capsys, "run", *TINY, "--lanes", "torch-nn-graph", "--device", "cpu", "--out", out)
    assert proc.returncode == 0 and "unavailable" in proc.stdout
    proc = run_main(monkeypatch, capsys, "report", out, "--plot", tmp_path / "p.png")
    assert_one_line_error(proc, "nothing to plot")
    assert not (tmp_path / "p.png").exists()


# --- commands that work ----------------------------------------------------------------------

def test_dry_run_lists_the_quick_suite(cli, tmp_path):
    proc = cli("run", "--dry-run", "--suite", "quick", "--device", "cpu", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    keys = [c.key for c in suite_cases("quick", "cpu")]
    assert lines[:-1] == keys and len(keys) == 12
    assert lines[-1] == f"12 cases × {len(LANES)} lanes"
    assert not (tmp_path / "runs").exists()


def test_dry_run_grid_and_default(monkeypatch, capsys):
    proc = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--cell", "lstm,gru",
                    "--hidden-size", "8,16", "--mode", "train,forward", "--lanes", "torch-nn,torch-cell-loop")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 2 * 2 * 2 + 1 and proc.stdout.endswith("8 cases × 2 lanes\n")
    assert "lstm-B32-T30-I128-H16-L1-fp32-forward-all_steps-cpu" in proc.stdout
    default = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu")
    assert default.returncode == 0 and default.stdout.splitlines()[-1] == f"12 cases × {len(LANES)} lanes"  # quick on a CPU


def test_input_size_hidden_follows_each_hidden_size(monkeypatch, capsys):
    proc = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--cell", "lstm",
                    "--hidden-size", "8,16", "--input-size", "hidden,5", "--mode", "forward", "--lanes", "torch-nn")
    assert proc.returncode == 0, proc.stderr
    names = proc.stdout.splitlines()[:-1]
    assert sorted(n.split("-")[3:5] for n in names) == [["I16", "H16"], ["I5", "H16"], ["I5", "H8"], ["I8", "H8"]]
    assert_one_line_error(run_main(monkeypatch, capsys, "run", "--input-size", "hid", "--dry-run"),
                          "--input-size takes whole numbers or 'hidden'")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, cli):
    """One real, tiny run through the command line."""
    tmp = tmp_path_factory.mktemp("cli")
    out = tmp / "out" / "tiny.jsonl"
    proc = cli("run", *TINY, "--lanes", "torch-nn,torch-fused-loop", "--budget", "0.02", "--device", "cpu",
                "--out", out, cwd=tmp)
    return tmp, out, proc


def test_tiny_run_prints_progress_and_a_table_and_writes_rows(tiny_run):
    _, out, proc = tiny_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "[1/2] gru-B2-T3-I4-H5-L1-fp32-train-all_steps-cpu torch-nn: ok" in proc.stdout
    assert "[2/2] gru-B2-T3-I4-H5-L1-fp32-train-all_steps-cpu torch-fused-loop: ok" in proc.stdout
    assert f"results: {out}" in proc.stdout
    assert "| Train (µs)" in proc.stdout and "train × torch-nn" in proc.stdout
    assert "| gru    | torch-fused-loop |" in proc.stdout
    rows = list(read_records(out, "result"))
    assert [(r["lane"], r["status"]) for r in rows] == [("torch-nn", "ok"), ("torch-fused-loop", "ok")]
    assert all(r["us_per_example"] > 0 for r in rows)
    assert len(list(read_records(out, "env"))) == 1


def test_resume_through_the_cli_adds_nothing(cli, tiny_run):
    tmp, out, _ = tiny_run
    before = out.read_text()
    proc = cli("run", *TINY, "--lanes", "torch-nn,torch-fused-loop", "--budget", "0.02", "--device", "cpu",
               "--out", out, "--resume", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert "[1/" not in proc.stdout and "| Train (µs)" in proc.stdout  # nothing measured, report re-shown
    rows = list(read_records(out, "result"))
    assert len(rows) == 2 and out.read_text().startswith(before)


def test_runs_measure_every_pair_once_a_run_each_run_a_process_of_its_own(cli, tmp_path):
    """``--runs 2``: every pair twice, its rows numbered 1 and 2, each run's rows from one process
    and the two runs' from two; the table says so. ``--runs 3 --resume`` measures run 3 alone."""
    out = tmp_path / "runs.jsonl"
    args = ("run", *TINY, "--lanes", "torch-nn,torch-fused-loop", "--budget", "0.02", "--device", "cpu",
            "--out", out)
    proc = cli(*args, "--runs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(read_records(out, "result"))
    assert sorted((r["run"], r["lane"]) for r in rows) == [(1, "torch-fused-loop"), (1, "torch-nn"),
                                                           (2, "torch-fused-loop"), (2, "torch-nn")]
    processes = {r["run"]: {r2["pid"] for r2 in rows if r2["run"] == r["run"]} for r in rows}
    assert len(processes[1]) == len(processes[2]) == 1 and processes[1] != processes[2]
    assert "run 2 of 2, a process of its own" in proc.stdout and "Runs: 2, each a process of its own" in proc.stdout
    proc = cli(*args, "--runs", "3", "--resume", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = list(read_records(out, "result"))
    assert after[:4] == rows and sorted((r["run"], r["lane"]) for r in after[4:]) == [(3, "torch-fused-loop"),
                                                                                      (3, "torch-nn")]


def test_report_markdown_csv_and_plot(cli, tiny_run):
    tmp, out, _ = tiny_run
    proc = cli("report", out, "--format", "csv", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["lane"] for r in rows] == ["torch-nn", "torch-fused-loop"]
    machine = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"  # the env record's GPU
    assert all(float(r["us_per_example"]) > 0 and r["status"] == "ok" and r["gpu"] == machine for r in rows)
    assert all(float(r["tflops"]) > 0 and float(r["peak_fraction"]) > 0 and float(r["peak_tflops"]) > 0 for r in rows)

    png = tmp / "speedup.png"
    proc = cli("report", out, out, "--plot", png, "--baseline", "torch-fused-loop", cwd=tmp)  # two files
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "Forward only (µs)" in proc.stdout and "train × torch-fused-loop" in proc.stdout
    assert "train TFLOP/s" in proc.stdout and "train % of peak" in proc.stdout and "Peak: " in proc.stdout
    assert f"plot: {png}" in proc.stderr

    proc = cli("report", out, "--standing", cwd=tmp)  # one row: the other lane against torch-nn
    assert proc.returncode == 0, proc.stderr
    standing = proc.stdout.split("### Standing against torch-nn")[1]
    assert "| torch-fused-loop |" in standing and "| torch-nn |" not in standing


# --- report: --baseline and --plot are checked before any work --------------------------------


def _synthetic_results(path):
    """A results file of one case: torch-nn and torch-fused-loop ok, torch-cell-loop mismatch."""
    from rnnbench.cases import Case
    from rnnbench.lanes import LANES
    from rnnbench.results import ResultsFile
    from rnnbench.runner import base_row

    out = ResultsFile(path)
    out.write_env({"env_id": "e", "gpu": None})
    case = Case(cell="gru", batch_size=2, seq_len=3, input_size=4, hidden_size=5)
    for lane, ms in (("torch-nn", 1.0), ("torch-fused-loop", 0.5), ("torch-cell-loop", None)):
        row = {**base_row(case, LANES[lane], "e"), "status": "ok" if ms else "mismatch", "message": ""}
        if ms:
            row.update(ms_per_batch=ms, us_per_example=ms * 1e3 / 2, noisy=False)
        out.append(row)
    return path


REPORT_CHECKS = {
    "--baseline nope": ["--baseline", "nope"],
    "--baseline of failed rows": ["--baseline", "torch-cell-loop"],
    "--baseline present": ["--baseline", "torch-fused-loop"],
    "--plot /dev/null": ["--plot", "/dev/null"],
    "--plot /dev/full": ["--plot", "/dev/full"],
    "--plot /proc": ["--plot", "/proc/rnnbench-speedup.png"],
    "--plot unknown type": ["--plot", "speedup.xyz"],
    "--plot a directory": ["--plot", "plots.png"],
    "--plot in a missing folder": ["--plot", "new/folder/speedup.svg"],
}


@pytest.fixture(scope="module")
def report_checks(tmp_path_factory, cli):
    tmp = tmp_path_factory.mktemp("report")
    results = _synthetic_results(tmp / "r.jsonl")
    (tmp / "plots.png").mkdir()
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(cli, "report", results, *args, cwd=tmp) for name, args in REPORT_CHECKS.items()}
        return tmp, {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name, fragments", [
    ("--baseline nope", ["--baseline nope has no measured (ok) rows", "lanes with rows: torch-nn, torch-fused-loop"]),
    ("--baseline of failed rows", ["--baseline torch-cell-loop has no measured (ok) rows"]),
    ("--plot /dev/null", ["--plot /dev/null"]),
    ("--plot /dev/full", ["--plot /dev/full"]),
    ("--plot /proc", ["--plot /proc/rnnbench-speedup.png", "kernel file system"]),
    ("--plot unknown type", ["--plot speedup.xyz", "unknown file type '.xyz'", ".png"]),
    ("--plot a directory", ["--plot plots.png is a directory"]),
])
def test_report_refuses_before_any_work(report_checks, name, fragments):
    tmp, runs = report_checks
    assert_one_line_error(runs[name], *fragments)
    assert runs[name].stdout == ""  # refused before any table was printed
    assert not list(tmp.glob("speedup.*")) and not (tmp / "proc").exists()


def test_report_baseline_present_and_plot_in_a_new_folder(report_checks):
    tmp, runs = report_checks
    assert runs["--baseline present"].returncode == 0, runs["--baseline present"].stderr
    assert "train × torch-fused-loop" in runs["--baseline present"].stdout
    made = runs["--plot in a missing folder"]
    assert made.returncode == 0, made.stderr
    assert (tmp / "new" / "folder" / "speedup.svg").read_text().lstrip().startswith("<?xml")


def test_env_json(cli, monkeypatch, capsys):
    proc = cli("env", "--json")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert {"torch", "python", "env_id"} <= set(record)
    assert record["torch"] == torch.__version__
    table = run_main(monkeypatch, capsys, "env")
    assert table.returncode == 0
    assert "env_id" in table.stdout and record["torch"] in table.stdout and record["python"] in table.stdout


def test_list(cli):
    proc = cli("list")
    assert proc.returncode == 0, proc.stderr
    for name in ("torch-nn", "torch-nn-graph", "torch-cell-loop", "torch-fused-loop",
                 "glample-2016", "theano-cudnn-2016", "fastrnns", "flashrnn-2024", "quick"):
        assert name in proc.stdout
    assert "runs on cuda only" in proc.stdout


def _interrupted_run(tmp_path, cli_env, *extra: str):
    """``rnnbench run`` of the quick suite (12 cases × 2 lanes at 0.3 s each: several seconds of
    work, ``extra`` options added) sent SIGINT once its first row is written: (the process, its
    stdout, its stderr, the results file)."""
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "rnnbench", "run", "--suite", "quick", "--lanes",
                             "torch-nn,torch-fused-loop", "--budget", "0.3", "--device", "cpu", "--out", str(out),
                             *extra],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a shell's background job inherits SIGINT ignored; Python then never raises
                            # KeyboardInterrupt, so give the child the default disposition back
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None and not list(read_records(out, "result")):
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, stdout, stderr, out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_keeps_rows_and_exits_130(tmp_path, cli_env):
    """SIGINT during a run: exit 130, one line saying where the rows are, every finished case's rows
    kept (both lanes of each: a case's lanes are timed together and written together)."""
    proc, stdout, stderr, out = _interrupted_run(tmp_path, cli_env)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines() == [f"interrupted; the rows of every case finished so far are in {out}, "
                                           "the case under way's are not (rerun with --resume to continue)"]
    rows = list(read_records(out, "result"))
    assert 2 <= len(rows) < 24 and len(rows) % 2 == 0 and all(r["status"] == "ok" for r in rows)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_runs_keeps_rows_and_exits_130(tmp_path, cli_env):
    """SIGINT to ``rnnbench run --runs 2`` alone (as ``kill -INT`` sends it; a terminal's Ctrl-C
    reaches the run's process too): passed on to the run under way, exit 130, the one line of the
    interrupted run, every finished case's rows kept, no second run."""
    proc, stdout, stderr, out = _interrupted_run(tmp_path, cli_env, "--runs", "2")
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines() == [f"interrupted; the rows of every case finished so far are in {out}, "
                                           "the case under way's are not (rerun with --resume to continue)"]
    rows = list(read_records(out, "result"))
    assert 2 <= len(rows) < 24 and len(rows) % 2 == 0 and {r["run"] for r in rows} == {1}
    assert "run 2 of 2" not in stdout


def test_a_grid_measures_both_modes_unless_mode_is_given(monkeypatch, capsys):
    proc = run_main(monkeypatch, capsys, "run", "--dry-run", "--device", "cpu", "--cell", "lstm")
    assert proc.returncode == 0
    keys = [line for line in proc.stdout.splitlines() if line.startswith("lstm-")]
    assert {k.split("-")[7] for k in keys} == {"train", "forward"}


@pytest.mark.parametrize("raised, code, said", [
    (KeyboardInterrupt(), 130, ""),  # (the parent says "interrupted" once, for every run)
    ("usage", 2, "rnnbench: error: bad case\n"),
    ("exit", 3, ""),
])
def test_a_run_process_ends_as_main_would(monkeypatch, capsys, tmp_path, raised, code, said):
    """One of ``--runs``' processes (``cli._one_run``) ends through the same ``cli._ended`` as
    ``main()``: its usage error one line and exit 2, ``typer.Exit`` its code, Ctrl-C 130 without
    a line of its own."""
    import typer

    from rnnbench import cli
    from rnnbench.errors import UsageError

    exc = {"usage": UsageError("bad case"), "exit": typer.Exit(3)}.get(raised, raised)

    def fail(*args, **kwargs):
        raise exc

    monkeypatch.setattr(cli, "_run_with_progress", fail)
    with pytest.raises(SystemExit) as ended:
        cli._one_run(2, [], [], tmp_path / "r.jsonl", False, False, 0.1, 1, {})
    assert ended.value.code == code and capsys.readouterr().err == said
