"""The command line: ``rnnbench env | list | run | report | compare | lm``.

Bad input prints one line on stderr and exits with code 2; an interrupted run says where its
results are and exits 130. No tracebacks for either.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from .cases import DTYPES, LOSSES, MODES, Case, expand_grid, unique
from .errors import UsageError
from .precision import resolve_device
from .terminal import ProgressView, make_console
from .timing import DEFAULT_TURNS

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Benchmark recurrent-network implementations (RNN, LSTM, GRU) side by side.")
console = make_console()
err = make_console(stderr=True)


def _split(text: Optional[str], field: str, integer: bool, words: tuple[str, ...] = ()):
    """``"32,128"`` -> ``[32, 128]``, duplicates dropped (first kept); None stays None. With
    ``integer``, an item in ``words`` stays a word (``--input-size hidden``).

    Raises:
        UsageError: an empty list (``--lanes ''`` means nothing, not everything), or a
            non-integer where whole numbers are wanted.
    """
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"--{field.replace('_', '-')} is empty; leave the option out to mean all")
    if integer:
        try:
            items = [t if t in words else int(t) for t in items]
        except ValueError:
            extra = "".join(f" or {w!r}" for w in words)
            raise UsageError(f"--{field.replace('_', '-')} takes whole numbers{extra}, got {text!r}") from None
    return list(dict.fromkeys(items))


@app.command("env")
def env_command(as_json: bool = typer.Option(False, "--json", help="Print the record as JSON.")):
    """Show the environment record stored with every result."""
    from .env import environment

    record = environment()
    if as_json:
        print(json.dumps(record, indent=2))
        return
    table = Table("field", "value", title="rnnbench environment")
    for key, value in record.items():
        table.add_row(key, str(value))
    console.print(table)


@app.command("list")
def list_command():
    """List the lanes (and whether each runs here) and the suites."""
    from .lanes import LANES
    from .suites import SUITES, suite_cases

    lanes = Table("lane", "what it is", "cells", "cpu", "cuda", title="lanes")
    lanes.columns[0].no_wrap = True  # a lane's name is what users type: never cut or wrapped
    for lane in LANES.values():
        here = [lane.unavailable(d) or "available" for d in ("cpu", "cuda")]
        lanes.add_row(lane.name, lane.summary, ", ".join(lane.cells), *here)
    console.print(lanes)
    suites = Table("suite", "cases", "source", title="suites")
    suites.columns[0].no_wrap = True
    for suite in SUITES.values():
        suites.add_row(suite.name, str(len(suite_cases(suite.name, "cpu"))), suite.source)
    console.print(suites)


def _cases(suite, device, grid_options: dict) -> list[Case]:
    from .suites import default_suites, suite_cases

    overrides = {k: v for k, v in grid_options.items() if v is not None}
    if suite is not None:
        names = _split(suite, "suite", integer=False)
        return unique(c for name in names for c in suite_cases(name, device, **overrides))
    if overrides:  # a grid measures both modes unless --mode narrows it, as suites do
        return expand_grid({"mode": ["train", "forward"], **overrides, "device": device})
    return unique(c for name in default_suites(device) for c in suite_cases(name, device))


@app.command("run")
def run_command(
    suite: Optional[str] = typer.Option(None, help="Suite name(s), comma-separated. Default: the seed suites on a GPU, 'quick' on the CPU."),
    cell: Optional[str] = typer.Option(None, help="rnn_tanh, rnn_relu, lstm, gru (comma list)."),
    batch_size: Optional[str] = typer.Option(None, help="Comma list of batch sizes."),
    seq_len: Optional[str] = typer.Option(None, help="Comma list of sequence lengths."),
    input_size: Optional[str] = typer.Option(None, help="Comma list of input sizes; 'hidden' = each hidden size (the seed tables' input = hidden)."),
    hidden_size: Optional[str] = typer.Option(None, help="Comma list of hidden sizes."),
    num_layers: Optional[str] = typer.Option(None, help="Comma list of layer counts."),
    dtype: Optional[str] = typer.Option(None, help=f"{', '.join(DTYPES)} (fp32 = strict, TF32 off)."),
    mode: Optional[str] = typer.Option(None, help=f"{', '.join(MODES)} (train = forward + backward from the loss)."),
    loss: Optional[str] = typer.Option(None, help=f"{', '.join(LOSSES)}."),
    lengths: Optional[str] = typer.Option(None, help="Variable-length batches: MIN:MAX, a length per sequence drawn from MIN..MAX (within 1:seq_len), padded to --seq-len (comma list)."),
    sort_lengths: bool = typer.Option(False, help="With --lengths: sort the sequences longest first (cuDNN's packed path prefers it)."),
    lanes: Optional[str] = typer.Option(None, help="Lanes to run (comma list). Default: all."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    out: Optional[Path] = typer.Option(None, help="Results file (JSON lines). Default: runs/<time>-<device>.jsonl."),
    resume: bool = typer.Option(False, help="Skip (case, lane) pairs already in --out (which must be given)."),
    retry_failed: bool = typer.Option(False, help="With --resume: measure again the pairs whose row says oom or error."),
    dry_run: bool = typer.Option(False, help="List the cases and exit."),
    baseline: str = typer.Option("torch-nn", help="Lane the speedup columns divide by."),
    budget: float = typer.Option(0.5, min=0.01, help="Seconds of timed repetitions per (case, lane)."),
    turns: int = typer.Option(DEFAULT_TURNS, min=1, help="Turns the lanes of a case take to spend their budgets, round and round, so a slow phase of the machine lands on every lane (1: one lane after another)."),
    compile_mode: str = typer.Option("default", help="torch.compile mode of the torch-compile lane: default, reduce-overhead, max-autotune."),
    worker_timeout: float = typer.Option(600.0, help="Seconds a framework's worker process may take to answer (start-up, first call) before the row says error."),
    runs: int = typer.Option(1, min=1, help="Measure everything this many times, each run a process of its own, one after another: a ratio between lanes moves between processes more than within one (docs/methodology.md). The tables give each pair's median and its ratio's range; rows say their run."),
):
    """Verify, then time, every lane on every case; append rows to a JSON-lines file."""
    from .lanes import LANES, get_lane
    from .lanes import options as lane_options

    run_options = lane_options.LaneOptions(compile_mode=compile_mode, worker_timeout_s=worker_timeout)
    device = resolve_device(device)
    grid = {"cell": _split(cell, "cell", False), "dtype": _split(dtype, "dtype", False),
            "mode": _split(mode, "mode", False), "loss": _split(loss, "loss", False),
            "lengths": _split(lengths, "lengths", False), "sort_lengths": True if sort_lengths else None}
    if sort_lengths and lengths is None:
        raise UsageError("--sort-lengths goes with --lengths MIN:MAX")
    sizes = dict(batch_size=batch_size, seq_len=seq_len, input_size=input_size, hidden_size=hidden_size,
                 num_layers=num_layers)
    grid.update({k: _split(v, k, True, ("hidden",) if k == "input_size" else ()) for k, v in sizes.items()})
    cases = _cases(suite, device, grid)
    chosen = [get_lane(n) for n in _split(lanes, "lanes", False)] if lanes is not None else list(LANES.values())
    get_lane(baseline)
    if resume and out is None:
        raise UsageError("--resume needs --out FILE: the results file to continue")
    if retry_failed and not resume:
        raise UsageError("--retry-failed goes with --resume")
    if dry_run:
        for case in cases:
            print(case.key)
        print(f"{len(cases)} cases × {len(chosen)} lanes")
        return
    out = out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{device}.jsonl"
    if runs == 1:
        with lane_options.using(**vars(run_options)):
            _run_with_progress(cases, chosen, out, resume, retry_failed, budget, turns)
    else:
        _run_in_processes(runs, cases, [lane.name for lane in chosen], out, resume, retry_failed, budget, turns,
                          vars(run_options))
    _print_report(out, baseline)


def _run_in_processes(runs: int, cases, lane_names: list[str], out: Path, resume: bool, retry_failed: bool,
                      budget: float, turns: int, run_options: dict) -> None:
    """``--runs``: each run in a fresh process (spawned: nothing of this one's state, CUDA's
    included, carries over), one after another, their rows appended to ``out``. Stops at a run
    that did not end well (interrupted: exit 130; failed: its exit code)."""
    import multiprocessing

    from .results import ResultsFile

    ResultsFile(out)  # (its checks' one-line errors here, not in every process)
    spawn = multiprocessing.get_context("spawn")
    for index in range(1, runs + 1):
        console.print(f"run {index} of {runs}, a process of its own")
        process = spawn.Process(target=_one_run, args=(index, cases, lane_names, out, resume, retry_failed, budget,
                                                       turns, run_options))
        process.start()
        try:
            process.join()
        except KeyboardInterrupt:
            process.join(timeout=2)  # (from a terminal, the run's process got it too)
            if process.is_alive():  # (sent to this process alone: pass it on)
                os.kill(process.pid, signal.SIGINT)
                process.join()
            if process.exitcode != 130:  # (the run had ended; else its process said where its rows are)
                err.print(f"interrupted; the rows of every run finished so far are in {out} (rerun with "
                          "--resume to continue)")
            raise typer.Exit(130)
        if process.exitcode:
            err.print(f"run {index} of {runs} ended with exit code {process.exitcode}; the rows so far are in {out}")
            raise typer.Exit(process.exitcode if process.exitcode > 0 else 1)


def _one_run(index: int, cases, lane_names: list[str], out: Path, resume: bool, retry_failed: bool, budget: float,
             turns: int, run_options: dict) -> None:
    """One of ``--runs``' processes: the run as ``rnnbench run`` makes it, its rows numbered ``index``."""
    from .lanes import get_lane
    from .lanes import options as lane_options

    try:
        with lane_options.using(**run_options):
            _run_with_progress(cases, [get_lane(n) for n in lane_names], out, resume, retry_failed, budget, turns,
                               index)
    except (Exception, KeyboardInterrupt) as exc:  # (Ctrl-C: the parent says it)
        sys.exit(_ended(exc, say_interrupted=False))


def _run_with_progress(cases, lanes, out: Path, resume: bool, retry_failed: bool, budget: float, turns: int,
                       run_index: int | None = None) -> None:
    from .results import ResultsFile
    from .runner import run

    results = ResultsFile(out)
    total = len(cases) * len(lanes)
    try:
        with ProgressView() as view:
            view.phase("starting", total)

            def on_row(row: dict) -> None:
                view.advance()
                if not view.live:  # piped: one line per pair; on a terminal the tables follow
                    view.line(_plain_line(view.done, total, row))

            run(cases, lanes, results, resume=resume, retry_failed=retry_failed, budget_s=budget, turns=turns, on_row=on_row,
                on_start=lambda c, l: view.describe(f"{c.key} · {l.name}"), on_note=view.line, run_index=run_index)
    except KeyboardInterrupt:
        err.print(f"interrupted; the rows of every case finished so far are in {out}, the case under way's "
                  "are not (rerun with --resume to continue)")
        raise typer.Exit(130)
    console.print(f"results: {out}")


def _plain_line(i: int, total: int, row: dict) -> str:
    figure = f"{row['us_per_example']:.1f} µs/example" if row["status"] == "ok" else row.get("message", "")
    return f"[{i}/{total}] {row['case_key']} {row['lane']}: {row['status']} {figure}"


def _print_report(path: Path, baseline: str) -> None:
    from .report import markdown
    from .results import load_results

    try:
        print(markdown(load_results(path), baseline))
    except UsageError:
        print("no result rows (everything was skipped or already measured)")


@app.command("report")
def report_command(
    files: list[Path] = typer.Argument(..., help="Results files (JSON lines) written by rnnbench."),
    format: str = typer.Option("md", help="md or csv."),
    plot: Optional[Path] = typer.Option(None, help="Also draw each lane's speedup over the baseline to this "
                                        "file (.png, .pdf, .svg, ...)."),
    baseline: Optional[str] = typer.Option(None, help="Lane the speedup columns divide by; it must have rows "
                                           "in the files. Default: torch-nn."),
    published: bool = typer.Option(True, help="Show the seeds' published figures beside ours."),
    standing: bool = typer.Option(False, help="Also a table of each lane against the baseline over every row: "
                                  "how many at least 0.9x and 1x as fast, median, worst."),
):
    """Re-render the tables (and optionally a plot) from results files."""
    import pandas as pd

    from .lm.report import lm_table, read_lm_records
    from .paths import check_output_file, plot_formats
    from .report import check_baseline, markdown
    from .report import standing as standing_table
    from .report import plot as draw
    from .results import load_results, read_records

    if format not in ("md", "csv"):
        raise UsageError(f"unknown format {format!r}; choose from md, csv")
    if plot is not None:
        check_output_file(plot, "--plot", suffixes=plot_formats())
    for f in files:
        if not f.is_file():
            raise UsageError(f"no results file at {f}")
    records = read_lm_records(files)
    micro = [load_results(f) for f in files if any(r["record"] == "result" for r in read_records(f))]
    lm_rows = lm_table(records)
    if not micro and lm_rows.empty:
        raise UsageError(f"{', '.join(map(str, files))}: no result rows")
    if micro:
        frame = pd.concat(micro, ignore_index=True)
        if baseline is not None:  # asked for by name: it must be there (the default may be absent)
            check_baseline(frame, baseline)
        baseline = baseline or "torch-nn"
        print(frame.to_csv(index=False) if format == "csv" else markdown(frame, baseline, published), end="")
        if standing:
            table = standing_table(frame, baseline)
            print(f"\n### Standing against {baseline}\n" if format == "md" else "")
            if table.empty:
                err.print(f"--standing: no lane has an ok row beside an ok {baseline} row")
            else:
                print(table.to_csv(index=False) if format == "csv" else table.to_markdown(index=False))
        if plot:
            draw(frame, str(plot), baseline)
            err.print(f"plot: {plot}")
    if not lm_rows.empty:
        print("\n### Language model (rnnbench lm)\n" if format == "md" else "")
        print(lm_rows.to_csv(index=False) if format == "csv" else lm_rows.to_markdown(index=False))


@app.command("compare")
def compare_command(
    base: Path = typer.Argument(..., help="Results file of the reference run (BASE)."),
    new: Path = typer.Argument(..., help="Results file of the run to judge (NEW)."),
    threshold: str = typer.Option("5%", help="Smallest change that counts, as 5% or 0.05."),
    format: str = typer.Option("md", help="md or csv."),
):
    """Compare two results files pair by pair: NEW/BASE ratio of medians with a bootstrap
    confidence interval. Exit code 1 when a pair is significantly slower beyond --threshold, or
    was ok in BASE and fails in NEW (mismatch, oom, too_large, error)."""
    from .compare import compare_files, csv, markdown, parse_threshold

    if format not in ("md", "csv"):
        raise UsageError(f"unknown format {format!r}; choose from md, csv")
    result = compare_files(base, new, parse_threshold(threshold))
    for line in result.warnings:
        print(f"rnnbench: {line}", file=sys.stderr)
    print(markdown(result) if format == "md" else csv(result), end="")
    if result.slower or result.broken:
        raise typer.Exit(1)


def _register_lm() -> None:
    from .lm.cli import lm

    app.command("lm")(lm)


_register_lm()


def main() -> None:
    """Entry point: typer in non-standalone mode so every usage error becomes one line."""
    try:
        code = app(standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:
        code = _ended(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _ended(exc: BaseException, say_interrupted: bool = True) -> int:
    """The exit code of a command that ``exc`` ended, said in one line on stderr: ``typer.Exit``
    its own; Ctrl-C 130 ("interrupted", unless ``say_interrupted`` is off); a ``UsageError`` 2; click's
    usage errors theirs. Called while ``exc`` is handled: anything else is raised again (a bug's
    traceback)."""
    if isinstance(exc, typer.Exit):
        return exc.exit_code
    if isinstance(exc, (typer.Abort, KeyboardInterrupt)):
        if say_interrupted:
            print("rnnbench: interrupted", file=sys.stderr)
        return 130
    if isinstance(exc, UsageError):
        if os.environ.get("RANK", "0") == "0":  # under torchrun every rank meets it; one says it
            print(f"rnnbench: error: {exc}", file=sys.stderr)
        return 2
    # Click's usage errors (typer vendors click in new releases, so match by shape, not class).
    if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
        raise exc
    if exc.format_message():  # empty for "no arguments: help shown"
        print(f"rnnbench: error: {exc.format_message()}", file=sys.stderr)
    return exc.exit_code
