"""Results files: JSON lines, appended and flushed one row at a time.

A line is either an environment record (``{"record": "env", ...}``) or a result row
(``{"record": "result", ...}``) that names its environment by ``env_id``. A run killed halfway
keeps every row already written; ``--resume`` reads the file and skips what is done.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from .errors import UsageError


class ResultsFile:
    """Append-only writer. Each :meth:`append` is flushed and fsync'ed before it returns."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(f"{self.path} is a directory; --out takes a file name such as results.jsonl")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        """A run killed mid-write leaves a last line without its newline: cut it off, so the
        next append starts a line of its own (the torn row was never complete)."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            with self.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def write_env(self, env: dict) -> None:
        """Append ``env`` unless a record with the same ``env_id`` is already in the file."""
        if not any(r.get("env_id") == env["env_id"] for r in read_records(self.path, "env")):
            self.append({"record": "env", **env})


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
        if not isinstance(record, dict) or "record" not in record:
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
