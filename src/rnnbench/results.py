"""Results files: JSON lines, appended and flushed one row at a time.

A line is either an environment record (``{"record": "env", ...}``) or a row of one kind of run,
``{"record": "result", ...}`` (the micro-benchmark) or ``{"record": "lm", ...}`` (the language
model), that names its environment by ``env_id``. A run killed halfway keeps every row already
written; ``--resume`` reads the file and skips what is done.

The lines are standard JSON (RFC 8259): a value that is NaN or infinite is written as ``null``
and the row's ``non_finite`` field says what it was (``{"valid_ppl": "inf"}``). A file that is not
ours is never touched: opening one for writing is refused before a byte changes.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Iterator

from .errors import UsageError
from .paths import check_output_file

RECORD_KINDS = ("env", "result", "lm")
# What each kind of row is written by, for messages.
WRITERS = {"result": "rnnbench run", "lm": "rnnbench lm"}


class ResultsFile:
    """Append-only writer for rows of one ``kind`` (``result`` or ``lm``). Each :meth:`append` is
    flushed and fsync'ed before it returns.

    Raises:
        UsageError: ``path`` cannot be written (see :func:`rnnbench.paths.check_output_file`), is a
            non-empty file that is not an rnnbench results file, or holds rows of another kind.
            The file is left byte for byte as it was.
    """

    def __init__(self, path: str | os.PathLike, kind: str = "result", option: str = "--out"):
        self.path = check_output_file(path, option)
        self.kind = kind
        check_owned(self.path, kind)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """A run killed mid-write leaves a last line without its newline: cut it off, so the
        next append starts a line of its own (the torn row was never complete). Only called on
        a file :func:`check_owned` has accepted."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            with self.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: dict) -> None:
        line = json.dumps(finite(record), default=str, allow_nan=False)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def write_env(self, env: dict) -> None:
        """Append ``env`` unless a record with the same ``env_id`` is already in the file."""
        if not any(r.get("env_id") == env["env_id"] for r in read_records(self.path, "env")):
            self.append({"record": "env", **env})


def finite(record: dict) -> dict:
    """``record`` with every NaN or infinite float (at the top level) replaced by None, and a
    ``non_finite`` field naming those fields and what they were (``"nan"``, ``"inf"``, ``"-inf"``)."""
    bad = {k: str(v) for k, v in record.items() if isinstance(v, float) and not math.isfinite(v)}
    if not bad:
        return record
    return {**{k: None if k in bad else v for k, v in record.items()}, "non_finite": bad}


def check_owned(path: Path, kind: str) -> None:
    """Raise UsageError unless ``path`` is missing, empty, or an rnnbench results file whose rows
    are all of ``kind``. Reads only; a torn last line (a run killed mid-write) is allowed."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb") as f:
        head = f.readline(1 << 20)
    try:
        first = json.loads(head)
    except (json.JSONDecodeError, UnicodeDecodeError):
        first = None
    if not isinstance(first, dict) or first.get("record") not in RECORD_KINDS:
        raise UsageError(f"{path} exists and is not an rnnbench results file; it was left untouched "
                         "(choose another file name)")
    others = {r["record"] for r in read_records(path)} - {"env", kind}
    if others:
        other = sorted(others)[0]
        raise UsageError(f"{path} holds rows of {WRITERS.get(other, other)}, not {WRITERS[kind]}; "
                         "it was left untouched (choose another file name)")


def read_records(path: str | os.PathLike, kind: str | None = None) -> Iterator[dict]:
    """Records of the file (``kind`` = "env" or "result" filters). A missing file yields nothing;
    a torn last line (a run killed mid-write) is skipped.

    Raises:
        UsageError: a line in the middle of the file is not JSON (not a results file).
    """
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue
            raise UsageError(f"{path}:{number} is not a JSON line; is this an rnnbench results file?")
        if not isinstance(record, dict) or record.get("record") not in RECORD_KINDS:
            raise UsageError(f"{path}:{number} is not an rnnbench record")
        if kind is None or record["record"] == kind:
            yield record


def load_results(path: str | os.PathLike):
    """Result rows joined with their environment records, as a pandas DataFrame.

    Raises:
        UsageError: missing file, or a file that holds no result rows.
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no results file at {path}")
    envs = {r["env_id"]: r for r in read_records(path, "env")}
    rows = list(read_records(path, "result"))
    if not rows:
        raise UsageError(f"{path} holds no result rows")
    frame = pd.DataFrame(rows)
    frame["gpu"] = [envs.get(e, {}).get("gpu") or "cpu" for e in frame.get("env_id", [None] * len(frame))]
    return frame
