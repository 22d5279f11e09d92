"""The ``rnnbench lm`` command: a plain function with typer options, registered by the main CLI
with ``app.command("lm")(lm)``. Bad input raises :class:`rnnbench.errors.UsageError` (the main
CLI prints it in one line and exits 2); a NaN loss exits 1; Ctrl-C exits 130 with every finished
epoch's row kept."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .data import DATASETS, Corpus, fetch_dataset, load_corpus
from .presets import PRESETS, get_preset
from .train import NonFiniteLossError, train_lm

_PANEL_MODEL, _PANEL_TRAIN, _PANEL_DATA, _PANEL_RUN = "Model", "Training", "Data", "Run"


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


def default_out(preset: str, lane: str, precision: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / "lm" / f"{preset}-{lane}-{precision}-{stamp}.jsonl"


def lm(
    preset: Annotated[str, typer.Option(help=f"Starting configuration: {', '.join(PRESETS)}.")] = "small",
    rnn: Annotated[Optional[str], typer.Option(help="LSTM, GRU, RNN_TANH or RNN_RELU.", rich_help_panel=_PANEL_MODEL)] = None,
    emb_size: Annotated[Optional[int], typer.Option(help="Embedding width.", rich_help_panel=_PANEL_MODEL)] = None,
    hidden_size: Annotated[Optional[int], typer.Option(help="Recurrent width.", rich_help_panel=_PANEL_MODEL)] = None,
    num_layers: Annotated[Optional[int], typer.Option(help="Stacked recurrent layers.", rich_help_panel=_PANEL_MODEL)] = None,
    dropout: Annotated[Optional[float], typer.Option(help="Dropout on embedding and recurrent output.", rich_help_panel=_PANEL_MODEL)] = None,
    tied: Annotated[Optional[bool], typer.Option("--tied/--no-tied", help="Tie decoder and embedding weights.", rich_help_panel=_PANEL_MODEL)] = None,
    lane: Annotated[Optional[str], typer.Option(help="Recurrent implementation (rnnbench list).", rich_help_panel=_PANEL_MODEL)] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Parallel token streams.", rich_help_panel=_PANEL_TRAIN)] = None,
    bptt: Annotated[Optional[int], typer.Option(help="Truncated-BPTT window length.", rich_help_panel=_PANEL_TRAIN)] = None,
    eval_batch_size: Annotated[Optional[int], typer.Option(help="Evaluation batch (default: --batch-size).", rich_help_panel=_PANEL_TRAIN)] = None,
    epochs: Annotated[Optional[int], typer.Option(help="Passes over the training split.", rich_help_panel=_PANEL_TRAIN)] = None,
    optimizer: Annotated[Optional[str], typer.Option(help="sgd or adam.", rich_help_panel=_PANEL_TRAIN)] = None,
    lr: Annotated[Optional[float], typer.Option(help="Learning rate.", rich_help_panel=_PANEL_TRAIN)] = None,
    clip: Annotated[Optional[float], typer.Option(help="Max gradient norm (0 = off).", rich_help_panel=_PANEL_TRAIN)] = None,
    seed: Annotated[Optional[int], typer.Option(help="Random seed.", rich_help_panel=_PANEL_TRAIN)] = None,
    amp: Annotated[Optional[str], typer.Option(help="off, bf16 or fp16 (torch.autocast).", rich_help_panel=_PANEL_TRAIN)] = None,
    tf32: Annotated[Optional[bool], typer.Option("--tf32/--no-tf32", help="Allow TF32 matmuls (CUDA).", rich_help_panel=_PANEL_TRAIN)] = None,
    max_steps: Annotated[Optional[int], typer.Option(help="Stop after this many optimiser steps.", rich_help_panel=_PANEL_RUN)] = None,
    max_minutes: Annotated[Optional[float], typer.Option(help="Stop training after this many minutes.", rich_help_panel=_PANEL_RUN)] = None,
    device: Annotated[Optional[str], typer.Option(help="auto, cpu or cuda.", rich_help_panel=_PANEL_RUN)] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help="Corpus directory (train.txt valid.txt test.txt) or, at char level, one text file.", rich_help_panel=_PANEL_DATA)] = None,
    dataset: Annotated[Optional[str], typer.Option(help=f"Fetch and cache: {', '.join(DATASETS)}.", rich_help_panel=_PANEL_DATA)] = None,
    level: Annotated[Optional[str], typer.Option(help="word or char (default: the dataset's).", rich_help_panel=_PANEL_DATA)] = None,
    dataset_note: Annotated[Optional[str], typer.Option(help="Label stored in every row, e.g. how the data was laid out.", rich_help_panel=_PANEL_DATA)] = None,
    out: Annotated[Optional[Path], typer.Option(help="Results file (JSON lines; appended).", rich_help_panel=_PANEL_RUN)] = None,
    checkpoint: Annotated[Optional[Path], typer.Option(help="Checkpoint written after every epoch.", rich_help_panel=_PANEL_RUN)] = None,
    resume: Annotated[bool, typer.Option(help="Continue from --checkpoint.", rich_help_panel=_PANEL_RUN)] = False,
    progress: Annotated[Optional[bool], typer.Option("--progress/--no-progress", help="Progress bar (default: on a terminal).", rich_help_panel=_PANEL_RUN)] = None,
) -> list[dict]:
    """Train a recurrent language model and measure words per second (synchronised).

    Every epoch appends a row to --out with train and eval words/s, ms per batch, train loss and
    validation perplexity (test perplexity on the last epoch). Presets: small (CPU-sized),
    kawakami-2017 (seed 002's WikiText-2 benchmark), zaremba-large (Zaremba et al. 2014, PTB).
    """
    from ..results import ResultsFile
    from .report import lm_table, rich_table, split_constant

    config = get_preset(preset).override(
        rnn=rnn, emb_size=emb_size, hidden_size=hidden_size, num_layers=num_layers, dropout=dropout,
        tied=tied, lane=lane, batch_size=batch_size, bptt=bptt, eval_batch_size=eval_batch_size,
        epochs=epochs, optimizer=optimizer, lr=lr, clip=clip, seed=seed, amp=amp, tf32=tf32,
        max_steps=max_steps, max_minutes=max_minutes, device=device)
    if level is not None and level not in ("word", "char"):
        raise UsageError(f"unknown level {level!r}; choose from word, char")
    corpus, labels = open_corpus(data_dir, dataset, level)
    labels["dataset_note"] = dataset_note
    out = out or default_out(config.preset, config.lane, config.precision)
    results = ResultsFile(out)
    try:
        rows = train_lm(config, corpus, results=results, checkpoint=checkpoint, resume=resume,
                        labels=labels, progress=progress)
    except NonFiniteLossError as exc:
        print(f"error: {exc} (rows of finished epochs are in {out})", file=sys.stderr)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        hint = f"; continue with --resume --checkpoint {checkpoint}" if checkpoint else ""
        print(f"interrupted: rows of finished epochs are in {out}{hint}", file=sys.stderr)
        raise typer.Exit(130) from None

    from rich.console import Console

    frame, label = split_constant(lm_table(rows))
    title = f"{label} ({labels['level']} level, vocabulary {len(corpus.vocab):,})"
    Console().print(rich_table(frame, title=title))
    print(f"results: {out}")
    return rows
