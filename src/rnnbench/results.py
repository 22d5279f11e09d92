"""Results files: JSON lines, appended and flushed one row at a time.

A line is either an environment record (``{"record": "env", ...}``) or a row of one kind of run,
``{"record": "result", ...}`` (the micro-benchmark) or ``{"record": "lm", ...}`` (the language
model), that names its environment by ``env_id``. A run killed halfway keeps every row already
written; ``--resume`` reads the file and skips what is done.

The lines are standard JSON (RFC 8259): a value that is NaN or infinite is written as ``null``
and the row's ``non_finite`` field says what it was (``{"valid_ppl": "inf"}``). A file that is not
ours is never touched: opening one for writing is refused before a byte changes.

Finished files may be kept gzip-compressed (``X.jsonl.gz``, as in ``benchmarks/results/``): the
readers take them as they are. The writers refuse a ``.gz`` name: rows are appended and synced
one at a time, and a compressed stream cut off by a killed run loses more than its last row.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
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
        UsageError: ``path`` cannot be written or names a ``.gz`` file (see
            :func:`check_results_out`), is a non-empty file that is not an rnnbench results file,
            or holds rows of another kind. The file is left byte for byte as it was.
    """

    def __init__(self, path: str | os.PathLike, kind: str = "result", option: str = "--out"):
        self.path = check_results_out(path, option)
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
        self.extend([record])

    def extend(self, records: list[dict]) -> None:
        """Append ``records`` in one write, flushed to disk: a Ctrl-C (raised between Python's
        steps, never inside the write) keeps all of them or none."""
        if not records:
            return
        text = "".join(json.dumps(finite(r), default=str, allow_nan=False) + "\n" for r in records)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)
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


def check_results_out(path: str | os.PathLike, option: str = "--out") -> Path:
    """``path`` as a Path once it is known rows can be appended there: not a ``.gz`` name (checked
    first, so nothing is created for one), then :func:`rnnbench.paths.check_output_file`.

    Raises:
        UsageError: a name ending in ``.gz``, or any path :func:`check_output_file` refuses.
    """
    if Path(path).suffix.lower() == ".gz":
        raise UsageError(f"{option} {path}: results are written as plain JSON lines, not gzip; give a "
                         ".jsonl name (gzip the file once the run is done; gunzip it first to --resume)")
    return check_output_file(path, option)


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
    """Records of the file (``kind`` = "env" or "result" filters), plain or gzip-compressed (a
    name ending in ``.gz``). A missing file yields nothing; a torn last line (a run killed
    mid-write) is skipped.

    Raises:
        UsageError: a line in the middle of the file is not JSON (not a results file), or a
            ``.gz`` file that is not gzip or is cut short.
    """
    for _, record in numbered_records(path, kind):
        yield record


def numbered_records(path: str | os.PathLike, kind: str | None = None) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` for each record of :func:`read_records` (numbers from 1)."""
    path = Path(path)
    if not path.exists():
        return
    lines = _read_lines(path)
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
            yield number, record


def _read_lines(path: Path) -> list[str]:
    """The lines of ``path`` as UTF-8 text (undecodable bytes replaced), through gzip when the name
    ends in ``.gz``.

    Raises:
        UsageError: a ``.gz`` file that is not gzip, is cut short or is corrupt.
    """
    if path.suffix.lower() != ".gz":
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    try:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; EOFError: cut short
        raise UsageError(f"{path} cannot be read as gzip ({exc}); is it a whole .jsonl.gz file?") from None


# What a result row must hold to be rendered or compared, and the type of each field.
TEXT_FIELDS = ("case_key", "lane", "env_id", "status", "cell", "dtype", "mode", "loss", "device")
SIZE_FIELDS = ("batch_size", "seq_len", "input_size", "hidden_size", "num_layers")
# Fields a row with status "ok" must also hold (positive numbers), and optional timing and
# arithmetic fields that must be numbers when present (rows written before them lack them).
OK_FIELDS = ("ms_per_batch", "us_per_example")
OPTIONAL_NUMBERS = ("p20_ms", "p80_ms", "tflops", "peak_tflops", "peak_fraction")


def load_results(path: str | os.PathLike):
    """Result rows joined with their environment records, as a pandas DataFrame: each row's
    ``gpu`` (``cpu`` where none) and ``git_commit`` (missing where unknown) from its ``env_id``'s record.

    Every result row is checked first (:func:`check_result_row`), so a hand-edited or foreign row
    is named by file and line instead of failing later inside a table or a plot.

    Raises:
        UsageError: missing file, a file that holds no result rows, or a row that lacks a field or
            holds a value of the wrong type (``r.jsonl:3: result row has no field 'lane'``).
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no results file at {path}")
    envs = {r["env_id"]: r for r in read_records(path, "env") if "env_id" in r}
    rows = []
    for number, row in numbered_records(path, "result"):
        check_result_row(row, f"{path}:{number}")
        rows.append(row)
    if not rows:
        raise UsageError(f"{path} holds no result rows")
    frame = pd.DataFrame(rows)
    frame["gpu"] = [envs.get(e, {}).get("gpu") or "cpu" for e in frame["env_id"]]
    frame["git_commit"] = [envs.get(e, {}).get("git_commit") for e in frame["env_id"]]
    # Rows written before variable-length batches existed are full-length cases.
    frame["lengths"] = frame["lengths"].fillna("") if "lengths" in frame else ""
    frame["sort_lengths"] = frame["sort_lengths"].fillna(False).astype(bool) if "sort_lengths" in frame else False
    # A single run's rows are run 1 (``rnnbench run --runs N`` numbers its processes' rows).
    frame["run"] = frame["run"].fillna(1).astype(int) if "run" in frame else 1
    return frame


def check_result_row(row: dict, where: str) -> None:
    """Raise UsageError (naming ``where``, e.g. ``r.jsonl:3``) unless ``row`` holds every field a
    result row needs, with the right type: the text fields, positive whole sizes, and for status
    ``ok`` a positive finite ``ms_per_batch`` and ``us_per_example``. ``p20_ms``, ``p80_ms``,
    ``tflops``, ``peak_tflops``, ``peak_fraction`` and ``samples_ms`` (a list) are optional, but
    when present must be finite numbers of at least 0 (a timer can read 0 on a tiny run); ``run``
    too, a positive whole number when present."""
    for field in TEXT_FIELDS + SIZE_FIELDS + (OK_FIELDS if row.get("status") == "ok" else ()):
        if field not in row:
            raise UsageError(f"{where}: result row has no field {field!r}")
    for field in TEXT_FIELDS:
        _check(isinstance(row[field], str), where, f"field {field!r}", row[field], "text")
    for field in SIZE_FIELDS:
        value = row[field]
        _check(isinstance(value, int) and not isinstance(value, bool) and value > 0, where, f"field {field!r}",
               value, "a positive whole number")
    if "run" in row:  # (one of `rnnbench run --runs N`'s processes)
        value = row["run"]
        _check(isinstance(value, int) and not isinstance(value, bool) and value > 0, where, "field 'run'", value,
               "a positive whole number")
    if row["status"] != "ok":
        return
    for field in OK_FIELDS:
        _check(_positive_number(row[field]), where, f"field {field!r}", row[field], "a positive number")
    for field in (f for f in OPTIONAL_NUMBERS if row.get(f) is not None):
        _check(_positive_number(row[field], zero=True), where, f"field {field!r}", row[field],
               "a number of at least 0")
    samples = row.get("samples_ms")
    if samples is not None:
        _check(isinstance(samples, list), where, "field 'samples_ms'", samples, "a list of numbers")
        for value in samples:
            _check(_positive_number(value, zero=True), where, "a value in 'samples_ms'", value,
                   "a number of at least 0")


def _positive_number(value, zero: bool = False) -> bool:
    """A finite int or float (not a bool) above 0 (at least 0 with ``zero``)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and (value >= 0 if zero else value > 0))


def _check(ok: bool, where: str, name: str, value, expected: str) -> None:
    if not ok:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise UsageError(f"{where}: {name} is {shown}, not {expected}")
