"""The ``rnnbench lm`` command: a plain function with typer options, registered by the main CLI
with ``app.command("lm")(lm)``. Bad input raises :class:`rnnbench.errors.UsageError` (the main
CLI prints it in one line and exits 2): the output paths are checked before anything is loaded,
and the model's memory before it is built. A NaN loss or a checkpoint that cannot be written
mid-run exits 1; Ctrl-C exits 130 with every finished epoch's row kept. ``--nproc N`` starts
the same command on N processes (torchrun's launcher); under torchrun only rank 0 prints."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from ..paths import check_output_file
from .checkpoint import CheckpointWriteError
from .data import DATASETS, Corpus, fetch_dataset, load_corpus
from .distributed import World, current_world, launch
from .loop import NonFiniteLossError
from .presets import PRESETS, get_preset
from .run import train_lm


def open_corpus(data_dir: Path | None, dataset: str | None, level: str | None) -> tuple[Corpus, dict]:
    """The corpus named by ``--data-dir`` or ``--dataset`` and the labels its rows carry.

    ``level`` None means: the dataset's own level (char for tinyshakespeare), char for a
    ``--data-dir`` that is a single file, else word.

    Raises:
        UsageError: neither or both given, unknown dataset, offline without the files, any
            problem with the files.
    """
    if (data_dir is None) == (dataset is None):
        raise UsageError("pass exactly one of --data-dir DIR and --dataset "
                         f"{'|'.join(DATASETS)}")
    if dataset is not None:
        path = fetch_dataset(dataset)  # UsageError for an unknown name or when offline
        level = level or DATASETS[dataset].level
        name = dataset
    else:
        path = Path(data_dir).expanduser()
        level = level or ("char" if path.is_file() else "word")
        name = f"{path.parent.name}/{path.name}" if path.is_file() else path.name
    corpus = load_corpus(path, level)
    return corpus, {"dataset": name, "level": level, "data_dir": str(path)}


def check_outputs(out: Path, checkpoint: Path | None, resume: bool, writes: bool = True):
    """The results file for ``out`` and the checked ``checkpoint`` path, before any work.

    ``writes``: this process writes the rows (one process, or rank 0 of several). Only then is
    the results file opened, which may mend a torn last line; the other ranks check the same
    paths and get None for the results file.

    Raises:
        UsageError: either path cannot be written (a directory, a device such as ``/dev/null``,
            a place under ``/proc``, an unwritable folder), ``out`` names a ``.gz`` file, ``out`` is a file that is not an
            rnnbench lm results file (left untouched), both name the same file, or ``--resume``
            without ``--checkpoint``.
    """
    from ..results import ResultsFile, check_owned, check_results_out

    if writes:
        results = ResultsFile(out, kind="lm")
        out = results.path
    else:
        results, out = None, check_results_out(out, "--out")
        check_owned(out, "lm")
    if checkpoint is not None:
        checkpoint = check_output_file(checkpoint, "--checkpoint")
        if checkpoint.resolve() == out.resolve():
            raise UsageError(f"--checkpoint and --out name the same file ({checkpoint}); give two files")
    elif resume:
        raise UsageError("--resume needs --checkpoint PATH")
    return results, checkpoint


def default_out(preset: str, lane: str, precision: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / "lm" / f"{preset}-{lane}-{precision}-{stamp}.jsonl"


def worker_argv(argv: list[str]) -> list[str]:
    """The ``rnnbench lm`` arguments of ``argv`` (``sys.argv``) without ``--nproc N``: what each
    worker of ``--nproc`` runs."""
    args = argv[argv.index("lm") + 1:] if "lm" in argv else list(argv)
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def start_workers(nproc: int, config, world: World, out: Path, checkpoint: Path | None, resume: bool) -> int:
    """Check what can be checked here (so a bad argument is one line, not one per rank), then run
    this command on ``nproc`` processes and return their exit code.

    Raises:
        UsageError: under torchrun already, ``--nproc`` below 1 or above the visible GPUs, a
            batch that does not divide among the processes, unusable output paths.
    """
    from .distributed import columns

    if world.size > 1:
        raise UsageError("under torchrun leave out --nproc (torchrun's --nproc_per_node sets it)")
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    for batch, option in ((config.batch_size, "--batch-size"),
                          (config.eval_batch_size or config.batch_size, "--eval-batch-size")):
        columns(batch, World(0, 0, nproc), option)
    check_outputs(out, checkpoint, resume)
    return launch(nproc, worker_argv(sys.argv), config.device)


def _opt(help: str, panel: str, *flags: str):
    """A typer option in one of the help panels (the flag name comes from the parameter)."""
    return typer.Option(*flags, help=help, rich_help_panel=panel)


M, T, D, R = "Model", "Training", "Data", "Run"  # help panels


def lm(
    preset: Annotated[str, _opt(f"Starting configuration: {', '.join(PRESETS)}.", M)] = "small",
    rnn: Annotated[Optional[str], _opt("LSTM, GRU, RNN_TANH or RNN_RELU.", M)] = None,
    emb_size: Annotated[Optional[int], _opt("Embedding width.", M)] = None,
    hidden_size: Annotated[Optional[int], _opt("Recurrent width.", M)] = None,
    num_layers: Annotated[Optional[int], _opt("Stacked recurrent layers.", M)] = None,
    dropout: Annotated[Optional[float], _opt("Dropout on embedding and recurrent output.", M)] = None,
    tied: Annotated[Optional[bool], _opt("Tie decoder and embedding weights.", M, "--tied/--no-tied")] = None,
    lane: Annotated[Optional[str], _opt("Recurrent implementation (see rnnbench list).", M)] = None,
    batch_size: Annotated[Optional[int], _opt("Parallel token streams.", T)] = None,
    bptt: Annotated[Optional[int], _opt("Truncated-BPTT window length.", T)] = None,
    eval_batch_size: Annotated[Optional[int], _opt("Evaluation batch (default: --batch-size).", T)] = None,
    epochs: Annotated[Optional[int], _opt("Passes over the training split.", T)] = None,
    optimizer: Annotated[Optional[str], _opt("sgd or adam.", T)] = None,
    lr: Annotated[Optional[float], _opt("Learning rate.", T)] = None,
    clip: Annotated[Optional[float], _opt("Max gradient norm (0 = off).", T)] = None,
    seed: Annotated[Optional[int], _opt("Random seed.", T)] = None,
    amp: Annotated[Optional[str], _opt("off, bf16 or fp16 (torch.autocast).", T)] = None,
    tf32: Annotated[Optional[bool], _opt("Allow TF32 matmuls (CUDA).", T, "--tf32/--no-tf32")] = None,
    max_steps: Annotated[Optional[int], _opt("Stop after this many optimiser steps.", R)] = None,
    max_minutes: Annotated[Optional[float], _opt("Stop training after this many minutes.", R)] = None,
    device: Annotated[Optional[str], _opt("auto, cpu or cuda.", R)] = None,
    data_dir: Annotated[Optional[Path], _opt("Corpus directory (train.txt valid.txt test.txt); "
                                             "at char level also one text file.", D)] = None,
    dataset: Annotated[Optional[str], _opt(f"Fetch once and cache: {', '.join(DATASETS)}.", D)] = None,
    level: Annotated[Optional[str], _opt("word or char (default: the dataset's).", D)] = None,
    dataset_note: Annotated[Optional[str], _opt("Label stored in every row, e.g. how the data "
                                                "was laid out.", D)] = None,
    out: Annotated[Optional[Path], _opt("Results file (JSON lines, appended).", R)] = None,
    checkpoint: Annotated[Optional[Path], _opt("Checkpoint rewritten after every epoch.", R)] = None,
    resume: Annotated[bool, _opt("Continue from --checkpoint.", R)] = False,
    progress: Annotated[Optional[bool], _opt("Progress bar (default: on a terminal).", R,
                                             "--progress/--no-progress")] = None,
    nproc: Annotated[Optional[int], _opt("Data-parallel processes on this host (one per GPU; "
                                         "gloo on the CPU); --batch-size is the global batch.", R)] = None,
) -> list[dict]:
    """Train a recurrent language model and measure words per second (synchronised).

    Every epoch appends a row to --out with train and eval words/s, ms per batch, train loss and
    validation perplexity (test perplexity on the last epoch). Presets: small (CPU-sized),
    kawakami-2017 (seed 002's WikiText-2 benchmark), zaremba-large (Zaremba et al. 2014, PTB).
    """
    from .report import lm_table, rich_table, split_constant

    config = get_preset(preset).override(
        rnn=rnn, emb_size=emb_size, hidden_size=hidden_size, num_layers=num_layers, dropout=dropout,
        tied=tied, lane=lane, batch_size=batch_size, bptt=bptt, eval_batch_size=eval_batch_size,
        epochs=epochs, optimizer=optimizer, lr=lr, clip=clip, seed=seed, amp=amp, tf32=tf32,
        max_steps=max_steps, max_minutes=max_minutes, device=device)
    if level is not None and level not in ("word", "char"):
        raise UsageError(f"unknown level {level!r}; choose from word, char")
    out = out or default_out(config.preset, config.lane, config.precision)
    world = current_world()
    if nproc is not None and (nproc != 1 or world.size > 1):
        raise typer.Exit(start_workers(nproc, config, world, out, checkpoint, resume))
    results, checkpoint = check_outputs(out, checkpoint, resume, writes=world.main)
    corpus, labels = open_corpus(data_dir, dataset, level)
    labels["dataset_note"] = dataset_note
    try:
        rows = train_lm(config, corpus, results=results, checkpoint=checkpoint, resume=resume,
                        labels=labels, progress=progress)
    except (NonFiniteLossError, CheckpointWriteError) as exc:
        if world.main:
            print(f"error: {exc} (rows of finished epochs are in {out})", file=sys.stderr)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        hint = f"; continue with --resume --checkpoint {checkpoint}" if checkpoint else ""
        if world.main:
            print(f"interrupted: rows of finished epochs are in {out}{hint}", file=sys.stderr)
        raise typer.Exit(130) from None
    if not world.main:
        return rows

    from ..terminal import make_console

    frame, label = split_constant(lm_table(rows))
    title = f"{label} ({labels['level']} level, vocabulary {len(corpus.vocab):,})"
    console = make_console()  # piped: full width, so no column or path is cut at 80
    console.print(rich_table(frame, title=title))
    console.print(f"results: {out}", markup=False)
    return rows
