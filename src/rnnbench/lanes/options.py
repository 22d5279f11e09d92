"""Run options that some lanes read (set once per ``rnnbench run``, recorded in the rows they shape).

A lane's ``prepare(case, inputs)`` reads :func:`current`; the command line sets them for the run
with :func:`using`. They are not part of the case: a row records the options its lane used
(``compile_mode`` for ``torch-compile``), so runs with different options go to different files.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

from ..errors import UsageError, check_choice

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")


@dataclass(frozen=True)
class LaneOptions:
    """Attributes:
        compile_mode: ``torch.compile``'s ``mode`` for the ``torch-compile`` lane.
        worker_timeout_s: how long a worker process may take to answer one request (start-up,
            preparation, the first call with its compilation) before it is killed and the row
            says ``error``; the timed repetitions get this plus their own expected duration.
    """

    compile_mode: str = "default"
    worker_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        check_choice("compile mode", self.compile_mode, COMPILE_MODES)
        if not self.worker_timeout_s > 0:
            raise UsageError(f"worker timeout must be positive, got {self.worker_timeout_s!r}")


_current = LaneOptions()


def current() -> LaneOptions:
    return _current


@contextlib.contextmanager
def using(**changes):
    """Within the block, :func:`current` has ``changes`` applied (validated: UsageError)."""
    global _current
    old = _current
    _current = dataclasses.replace(old, **changes)
    try:
        yield _current
    finally:
        _current = old
