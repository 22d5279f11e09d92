"""Everything a language-model run writes, in one place: result rows, the checkpoint, progress.

The loops (:mod:`.loop`) and the epoch loop (:mod:`.run`) compute; only :class:`RunOutput`
touches files or the terminal. In a data-parallel run every rank computes but only rank 0 may
write rows, checkpoints and lines (several writers would race on the checkpoint's temporary
file and print every line N times): that rank gets a RunOutput with files, the others one
without (``results=None, checkpoint=None, live=False, quiet=True``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..results import ResultsFile
from ..terminal import PLAIN_EVERY_S, ProgressView
from .checkpoint import save_checkpoint


def epoch_summary(row: dict) -> str:
    """One line per epoch: ``epoch 2/10  steps 13  train 512,345 words/s ...``."""
    def num(value, fmt):
        return "-" if value is None else format(value, fmt)

    text = (f"epoch {row['epoch']}/{row['epochs']}  steps {row['steps']}  "
            f"train {num(row['train_wps'], ',.0f')} words/s  eval {num(row['eval_wps'], ',.0f')} words/s  "
            f"{num(row['ms_per_batch'], '.2f')} ms/batch  loss {num(row['train_loss'], '.3f')}  "
            f"valid ppl {num(row['valid_ppl'], '.2f')}")
    if row.get("test_ppl") is not None:
        text += f"  test ppl {row['test_ppl']:.2f}"
    if row.get("stopped"):
        text += f"  (stopped: {row['stopped']})"
    if row.get("status", "ok") != "ok":
        text += f"  ({row['status']}: {row.get('message')})"
    return text


class RunOutput:
    """Result rows, checkpoints and progress of one run. Use as a context manager.

    Args:
        results: where rows go (None: rows are only returned).
        checkpoint: the file rewritten after every epoch (None: no checkpoint).
        live: True/False forces the progress bar on/off; None: on for a terminal. Without a bar,
            plain progress lines come at least every ``every_s`` seconds while a phase runs.
        every_s: longest silence between two plain progress lines (seconds).
        quiet: print nothing at all (the ranks other than 0 of a data-parallel run).
    """

    def __init__(self, results: ResultsFile | None = None, checkpoint: Path | None = None, *,
                 live: bool | None = None, every_s: float = PLAIN_EVERY_S, quiet: bool = False):
        self.results = results
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.view = None if quiet else ProgressView(live, every_s)
        self.last_good: int | None = None  # epoch of the newest checkpoint on disk, if ours

    def __enter__(self) -> "RunOutput":
        if self.view is not None:
            self.view.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.view is not None:
            self.view.__exit__(*exc)

    def begin(self, env: dict, resumed_epoch: int | None = None) -> None:
        """Write the environment record (once per file); ``resumed_epoch``: the checkpoint's."""
        self.last_good = resumed_epoch
        if self.results is not None:
            self.results.write_env(env)

    # Progress of the phase under way (the loops' :class:`rnnbench.lm.loop.Progress`).
    def phase(self, description: str, total: int) -> None:
        if self.view is not None:
            self.view.phase(description, total)

    def advance(self, info: str | None = None) -> None:
        if self.view is not None:
            self.view.advance(info)

    def line(self, text: str) -> None:
        """A line that stays (above the bar on a terminal)."""
        if self.view is not None:
            self.view.line(text)

    def epoch_done(self, row: dict, state: Callable[[], dict] | None) -> None:
        """Record a finished epoch: the result row, then the checkpoint (``state()`` is only
        built when one is kept; ``state`` may be None when none is), then its summary line.

        The row goes first and is on disk (flushed and fsync'ed) before the checkpoint is
        written: a kill between the two keeps the row, and the checkpoint on disk is still the
        previous epoch's, from which ``--resume`` trains this epoch again and appends a second
        row for it (same ``run_id`` and ``start_step``; the report keeps the later one). The
        other order lost the row for good: the checkpoint said the epoch was done.
        """
        if self.results is not None:
            self.results.append(row)
        if self.checkpoint is not None:
            save_checkpoint(self.checkpoint, state())
            self.last_good = row["epoch"]
        self.line(epoch_summary(row))

    def kept(self) -> str:
        """What a stopped run leaves to resume from, for its message."""
        if self.checkpoint is not None and self.last_good is not None:
            return f"last good checkpoint {self.checkpoint} (epoch {self.last_good})"
        return "no checkpoint kept"
