"""What the commands print: consoles that never cut a name, and the one progress view.

On a terminal, rich draws tables and a live progress bar. Piped into a file or ``grep``, rich
would assume 80 columns and cut names (``torch-cell-l…``) and wrap paths mid-word; here a console
whose output is not a terminal gets a width no line reaches, and the progress view prints plain
lines instead of a bar: one per finished item it is told of, and otherwise one every few seconds,
so a long phase is never silent.
"""

from __future__ import annotations

import time

from rich.console import Console

# Width for output that is not a terminal: wider than any line we print, so nothing wraps.
PIPE_WIDTH = 10_000
# A piped progress view prints a line at least this often (seconds) while a phase runs.
PLAIN_EVERY_S = 5.0


def make_console(stderr: bool = False) -> Console:
    """A rich Console for stdout (or stderr) that keeps whole lines when not on a terminal."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=PIPE_WIDTH, soft_wrap=True)
    return console


class ProgressView:
    """Progress of a long command: a rich bar on a terminal, timed plain lines otherwise.

    Use as a context manager. :meth:`phase` starts a counted phase, :meth:`describe` renames the
    current item, :meth:`advance` counts one item done (with an optional status text such as
    ``"512,000 words/s  loss 5.1"``), :meth:`line` prints a line that stays.

    Args:
        live: True/False forces the bar on/off; None: on when stdout is a terminal.
        every_s: with no bar, the longest silence between two progress lines (seconds).
    """

    def __init__(self, live: bool | None = None, every_s: float = PLAIN_EVERY_S):
        self.console = make_console()
        self.live = self.console.is_terminal if live is None else live
        self.every_s = every_s
        self.progress = None
        self.task = None
        self.description, self.total, self.done, self.info = "", 0, 0, ""
        self._last_print = time.monotonic()

    def __enter__(self) -> "ProgressView":
        if self.live:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                                     TimeRemainingColumn(), console=self.console, transient=True)
            self.progress.start()
            self.task = self.progress.add_task("", total=1, info="")
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def phase(self, description: str, total: int) -> None:
        """Start counting ``total`` items of a phase called ``description``."""
        self.description, self.total, self.done, self.info = description, total, 0, ""
        self._last_print = time.monotonic()
        if self.progress is not None:
            self.progress.reset(self.task, total=total, description=description, info="")

    def describe(self, description: str) -> None:
        """Name the item now under way (the count is kept)."""
        self.description = description
        if self.progress is not None:
            self.progress.update(self.task, description=description)

    def advance(self, info: str | None = None) -> None:
        """One item of the phase is done; ``info`` replaces the status text when given."""
        self.done += 1
        if info is not None:
            self.info = info
        if self.progress is not None:
            self.progress.update(self.task, advance=1, info=self.info)
        elif time.monotonic() - self._last_print >= self.every_s:
            self.line(f"{self.description}  {self.done}/{self.total}  {self.info}".rstrip())

    def line(self, text: str) -> None:
        """Print ``text`` as a line of its own (above the bar on a terminal)."""
        self._last_print = time.monotonic()
        self.console.print(text, highlight=False, markup=False)
