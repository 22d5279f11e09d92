"""Output paths, checked before any work starts.

A results file, a checkpoint or a plot that cannot be written should be found out in the first
second, not after an epoch of training: every command checks its output paths with
:func:`check_output_file` before it builds anything.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import UsageError


def plot_formats() -> tuple[str, ...]:
    """File extensions matplotlib can write here (``png``, ``pdf``, ``svg``, ...)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return tuple(sorted(Figure().canvas.get_supported_filetypes()))


def check_output_file(path: str | os.PathLike, option: str, *, suffixes: tuple[str, ...] | None = None) -> Path:
    """``path`` as a Path once it is known that a regular file can be written there.

    Missing parent folders are created. Nothing else is written: a probe file made in the folder
    to test it is removed at once, and an existing file is left as it is.

    Args:
        path: the file the command will write.
        option: the option's name for messages, e.g. ``--out``.
        suffixes: accepted extensions without the dot (``("png", "pdf")``); None accepts any.

    Raises:
        UsageError: a directory, a device or other non-regular file (``/dev/null``, ``/dev/full``),
            a place under ``/proc`` or ``/sys``, an unwritable file or folder, or a wrong extension.
    """
    path = Path(path)
    if suffixes is not None and path.suffix.lstrip(".").lower() not in suffixes:
        raise UsageError(f"{option} {path}: unknown file type {path.suffix or '(none)'!r}; "
                         f"use one of {', '.join('.' + s for s in suffixes)}")
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory; give a file name")
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file (a device or a pipe)")
    resolved = path.resolve()
    if resolved.parts[1:2] in (("proc",), ("sys",)):
        raise UsageError(f"{option} {path} is inside a kernel file system; give a file on disk")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path} is not writable")
    _check_folder(path.parent, option)
    return path


def _check_folder(folder: Path, option: str) -> None:
    """Create ``folder`` if needed and prove a file can be created in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".rnnbench-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{option}: cannot write in {folder} ({exc.strerror or type(exc).__name__})") from None
