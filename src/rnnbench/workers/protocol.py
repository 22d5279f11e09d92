"""The request/reply protocol between the runner and a worker process, and the worker's loop.

Messages are pickled dicts, each preceded by its length (8 bytes, little-endian), over the
worker's stdin (requests) and a private copy of its stdout (replies). The worker points its file
descriptor 1 at stderr before importing anything, so a framework that prints cannot corrupt a
reply. Arrays travel as numpy ``float32`` arrays (bf16/fp16 results are widened exactly).

Requests (``op``):

- ``prepare``: ``id``, ``lane``, ``case`` (the Case's fields), ``names`` (what the step returns,
  :func:`rnnbench.workload.expected_names`), ``arrays`` (``weights`` in canonical names and ``x``
  ``[T, B, I]``, ``h0``/``c0`` ``[L, B, H]``, ``target``, ``target_h``, ``target_c`` as in
  :class:`rnnbench.workload.Inputs`; ``lengths`` ``[B]`` int64 for a variable-length batch, else
  None), ``settings`` (the lane's fixed settings, e.g.
  ``use_cudnn``), ``threads`` (torch's intra-op threads in the runner).
- ``first_call``: ``id`` -> ``outputs`` (name -> array), ``ms``, ``extra``.
- ``warm_up``: ``id``, ``budget_s``, ``first_call_ms`` -> ``min_runs``, ``max_runs``, ``call_ms``
  (the timed runs the call gets, :func:`rnnbench.timing.warm_up`), ``extra``.
- ``sample``: ``id``, ``budget_s``, ``min_runs``, ``max_runs`` -> ``samples_ms`` (one turn's timed
  calls, :func:`rnnbench.timing.sample`), ``extra``.
- ``close``: ``id``; ``exit``.

Every reply has ``ok``; a failed request answers ``ok: False`` and ``error`` (``Type: first
line``) and the worker waits for the next request. The first message a worker sends, unasked, is
``hello`` with its framework versions.
"""

from __future__ import annotations

import gc
import os
import pickle
import struct
import sys
import traceback
from typing import BinaryIO, Callable

HEADER = struct.Struct("<Q")


def encode(message: dict) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def write_message(stream: BinaryIO, message: dict) -> None:
    stream.write(encode(message))
    stream.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> dict:
    """The next message; EOFError when the pipe is closed."""
    (n,) = HEADER.unpack(_read_exact(stream, HEADER.size))
    return pickle.loads(_read_exact(stream, n))


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


class ArrayStep:
    """A worker-side step: subclasses set ``timer`` (``"cuda"`` for torch's CUDA events, else
    the host clock around a call that blocks until its device is done) and implement
    :meth:`run` (one synchronised step) and :meth:`outputs` (its result as named float32 numpy
    arrays in canonical layout). ``extra`` becomes fields of the result row."""

    timer = "cpu"

    def __init__(self) -> None:
        self.extra: dict = {}

    def run(self):
        raise NotImplementedError

    def outputs(self, result) -> dict:
        raise NotImplementedError

    def before_call(self) -> None:
        """Put the framework's process-wide settings (matmul precision) in place for this step;
        called before every request that runs it, outside the timed region."""

    def first_call(self) -> tuple[dict, float]:
        from ..timing import time_call

        self.before_call()
        result, ms = time_call(self.run, self.timer)
        return self.outputs(result), ms

    def warm_up(self, budget_s: float, first_call_ms: float) -> dict:
        from ..timing import warm_up

        self.before_call()
        runs = warm_up(self.run, self.timer, budget_s=budget_s, first_call_ms=first_call_ms)[1]
        return {"min_runs": runs.min_runs, "max_runs": runs.max_runs, "call_ms": runs.call_ms}

    def sample(self, budget_s: float, min_runs: int, max_runs: int) -> list[float]:
        from ..timing import RunCounts, sample

        self.before_call()
        return sample(self.run, self.timer, budget_s=budget_s, runs=RunCounts(min_runs, max_runs))


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """``(requests, replies)``: stdin, and a private duplicate of stdout; file descriptor 1 then
    points at stderr, so stray prints (from the framework or anyone) land in the worker's log."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(0, "rb", closefd=False), replies


def serve(make_step: Callable[[dict], ArrayStep], hello: dict,
          streams: tuple[BinaryIO, BinaryIO] | None = None) -> None:
    """Answer requests until ``exit`` or the end of stdin. ``make_step(request)`` builds the step
    of a ``prepare`` request (raising whatever it cannot do)."""
    requests, replies = streams or protocol_streams()
    write_message(replies, {"ok": True, "hello": hello})
    steps: dict[int, ArrayStep] = {}
    while True:
        try:
            request = read_message(requests)
        except EOFError:
            return
        op = request.get("op")
        try:
            if op == "exit":
                write_message(replies, {"ok": True})
                return
            if op == "prepare":
                steps[request["id"]] = make_step(request)
                reply = {"extra": steps[request["id"]].extra}
            elif op == "first_call":
                step = steps[request["id"]]
                outputs, ms = step.first_call()
                reply = {"outputs": outputs, "ms": ms, "extra": step.extra}
            elif op == "warm_up":
                step = steps[request["id"]]
                reply = {**step.warm_up(request["budget_s"], request["first_call_ms"]), "extra": step.extra}
            elif op == "sample":
                step = steps[request["id"]]
                reply = {"samples_ms": step.sample(request["budget_s"], request["min_runs"], request["max_runs"]),
                         "extra": step.extra}
            elif op == "close":
                steps.pop(request["id"], None)
                gc.collect()
                reply = {}
            else:
                raise ValueError(f"unknown request {op!r}")
            write_message(replies, {"ok": True, **reply})
        except Exception as exc:  # the row says what broke; the worker waits for the next request
            traceback.print_exc()
            write_message(replies, {"ok": False, "error": first_line(exc)})
