"""Lanes that run in a worker process, one process per framework (the runner's side).

A framework other than PyTorch never shares the runner's process: two frameworks in one process
fight over GPU memory and over their own cuDNN builds, and a framework that crashes or hangs must
cost one row, not the run. A worker lane's ``prepare(case, inputs)`` starts the framework's worker
(or reuses the one already running), sends it the case, the canonical weights and the inputs as
numpy arrays, and returns a :class:`WorkerStep`; the runner then treats it like any step: the
first call (with its compilation) is timed and its outputs, final states and gradients are
verified here against the float64 reference; the timed repetitions run in the worker under the
same rules (:mod:`rnnbench.timing`) and come back as the timed calls' ms.

Faults become :class:`WorkerError` (a RuntimeError, so an out-of-memory message is recorded as
``oom``), which the runner records as the row's status with a one-line message:

- the worker raises: the error's first line; the worker lives on;
- the worker dies (segfault, killed, ``os._exit``): ``... worker died during <request> (exit code N
  / signal NAME)`` and the last line it wrote to stderr; the next pair starts a fresh worker;
- the worker does not answer within the timeout (``--worker-timeout``, default 600 s for start-up,
  preparation and the first call; the warm-up gets that plus ten first calls, each turn of timed
  calls that plus twice its budget and three first calls per run it must make): it is killed and
  the row says so.

The other side is :mod:`rnnbench.workers` (``python -m rnnbench.workers.<framework>_worker``).
"""

from __future__ import annotations

import atexit
import itertools
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..timing import RunCounts
from ..workers.protocol import HEADER, encode
from . import options

SRC = Path(__file__).resolve().parents[2]  # the directory holding the rnnbench package
# How long a worker may take to exit when asked, before it is killed.
EXIT_GRACE_S = 5.0


class WorkerError(RuntimeError):
    """A worker failed a request, died, or did not answer in time (one-line message)."""


@dataclass(frozen=True)
class WorkerSpec:
    """How to start one framework's worker.

    Attributes:
        name: the worker's name (one process per name), e.g. ``jax``, ``keras-torch``.
        module: the module run with ``python -m``.
        env: variables set for the worker (e.g. ``KERAS_BACKEND``).
        python_env: an environment variable naming another interpreter to run the worker with
            (e.g. ``RNNBENCH_TF_PYTHON`` for a TensorFlow kept in its own virtual environment);
            unset: this interpreter.
        argv: the whole command instead of ``python -m module`` (tests start fake workers so).
    """

    name: str
    module: str = ""
    env: dict = field(default_factory=dict)
    python_env: str | None = None
    argv: tuple[str, ...] | None = None

    def python(self) -> str:
        return (os.environ.get(self.python_env) if self.python_env else None) or sys.executable

    def command(self) -> list[str]:
        return list(self.argv) if self.argv else [self.python(), "-m", self.module]


def worker_env(spec: WorkerSpec) -> dict:
    """The worker's environment: ours, this checkout's ``src`` first on PYTHONPATH, unbuffered
    stderr (the last line of a crash reaches the log), JAX told not to take the whole GPU."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1",
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_CPP_MIN_LOG_LEVEL": "2", **spec.env}


class Worker:
    """One running worker process. Use :func:`get_worker`, which reuses a live one."""

    def __init__(self, spec: WorkerSpec, timeout_s: float):
        self.spec = spec
        self.log = tempfile.NamedTemporaryFile(prefix=f"rnnbench-{spec.name}-", suffix=".log", delete=False)
        try:
            self.proc = subprocess.Popen(spec.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log, env=worker_env(spec), start_new_session=True)
        except OSError as exc:
            self._remove_log()
            raise WorkerError(f"cannot start the {spec.name} worker: {exc}") from None
        try:
            self.hello = self._reply("start-up", timeout_s)["hello"]
        except WorkerError:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, message: dict, timeout_s: float) -> dict:
        """Send ``message`` and return the reply. Raises WorkerError (see the module docstring)."""
        op = message.get("op", "?")
        if not self.alive:
            raise self._died(op)
        try:
            self.proc.stdin.write(encode(message))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(op) from None
        reply = self._reply(op, timeout_s)
        if not reply.get("ok"):
            raise WorkerError(reply.get("error") or f"the {self.spec.name} worker failed {op}")
        return reply

    def _reply(self, op: str, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        header = self._read(HEADER.size, deadline, op, timeout_s)
        (n,) = HEADER.unpack(header)
        return pickle.loads(self._read(n, deadline, op, timeout_s))

    def _read(self, n: int, deadline: float, op: str, timeout_s: float) -> bytes:
        fd = self.proc.stdout.fileno()
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                self.kill()
                raise WorkerError(f"the {self.spec.name} worker gave no answer to {op} within "
                                  f"{timeout_s:g} s; killed it")
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                raise self._died(op)
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _died(self, op: str) -> WorkerError:
        try:
            code = self.proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        how = f"signal {_signal_name(-code)}" if code is not None and code < 0 else f"exit code {code}"
        last = self.last_log_line()
        return WorkerError(f"the {self.spec.name} worker died during {op} ({how})" + (f": {last}" if last else ""))

    def last_log_line(self) -> str:
        """The last non-empty line the worker wrote to stderr (at most 300 characters)."""
        try:
            with open(self.log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log.name) - 8192))
                lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def kill(self) -> None:
        if self.alive:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not within EXIT_GRACE_S."""
        if self.alive:
            try:
                self.request({"op": "exit"}, EXIT_GRACE_S)
                self.proc.wait(timeout=EXIT_GRACE_S)
            except (WorkerError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._remove_log()

    def _remove_log(self) -> None:
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


_WORKERS: dict[str, Worker] = {}
_IDS = itertools.count(1)


def get_worker(spec: WorkerSpec) -> Worker:
    """The running worker named ``spec.name``, started (or restarted, if it died) as needed."""
    worker = _WORKERS.get(spec.name)
    if worker is not None and worker.alive and worker.spec == spec:
        return worker
    if worker is not None:
        worker.close()
    _WORKERS[spec.name] = worker = Worker(spec, options.current().worker_timeout_s)
    return worker


@atexit.register
def close_all() -> None:
    """Stop every worker (at exit, and from tests)."""
    while _WORKERS:
        _, worker = _WORKERS.popitem()
        worker.close()


def arrays_of(inputs) -> dict:
    """:class:`rnnbench.workload.Inputs` as float32 numpy arrays (weights in canonical names), and
    the lengths ``[B]`` (int64) of a variable-length batch, or None."""
    as_np = lambda t: t.detach().to(torch.float32).cpu().numpy()  # noqa: E731
    lengths = getattr(inputs, "lengths", None)
    return {"weights": {n: as_np(w) for n, w in inputs.weights.items()},
            **{k: as_np(getattr(inputs, k)) for k in ("x", "h0", "c0", "target", "target_h", "target_c")},
            "lengths": None if lengths is None else lengths.cpu().numpy()}


class WorkerStep:
    """A :class:`rnnbench.workload.Step` answered by a worker process; timed alone, not in turns
    with other lanes' steps, so that a worker's fault costs one row."""

    in_turns = False

    def __init__(self, worker: Worker, step_id: int, device: str, extra: dict, timeout_s: float,
                 names: tuple[str, ...] = ()):
        self.worker, self.id, self.device, self.extra = worker, step_id, device, extra
        self.timeout_s = timeout_s  # --worker-timeout as it was when the step was prepared
        self.names = names  # what the step returns, in expected_names' order
        self.first_call_s = 0.0

    def first_call(self) -> tuple[dict[str, torch.Tensor], float]:
        reply = self.worker.request({"op": "first_call", "id": self.id}, self.timeout_s)
        self.extra.update(reply["extra"])
        # The scale of a sample's time limit: the longest call seen (the runner also verifies a
        # second, warm one through here).
        self.first_call_s = max(self.first_call_s, reply["ms"] / 1e3)
        returned = reply["outputs"]
        order = [n for n in self.names if n in returned] + [n for n in returned if n not in self.names]
        return {n: torch.from_numpy(returned[n]).to(self.device) for n in order}, reply["ms"]

    def warm_up(self, budget_s: float, first_call_ms: float) -> RunCounts:
        timeout = self.timeout_s + 10 * first_call_ms / 1e3
        reply = self.worker.request({"op": "warm_up", "id": self.id, "budget_s": budget_s,
                                     "first_call_ms": first_call_ms}, timeout)
        self.extra.update(reply["extra"])
        return RunCounts(reply["min_runs"], reply["max_runs"], reply["call_ms"])

    def sample(self, budget_s: float, runs: RunCounts) -> list[float]:
        timeout = self.timeout_s + 2 * budget_s + 3 * runs.min_runs * self.first_call_s
        reply = self.worker.request({"op": "sample", "id": self.id, "budget_s": budget_s,
                                     "min_runs": runs.min_runs, "max_runs": runs.max_runs}, timeout)
        self.extra.update(reply["extra"])
        return list(reply["samples_ms"])

    def close(self) -> None:
        if self.worker is not None and self.worker.alive:
            try:
                self.worker.request({"op": "close", "id": self.id}, self.timeout_s)
            except WorkerError:
                pass  # a worker that cannot free a step has already failed its row
        self.worker = None


def prepare_in_worker(spec: WorkerSpec, lane: str, settings: dict, case, inputs) -> WorkerStep:
    """Start (or reuse) ``spec``'s worker and prepare ``lane`` for ``case`` there."""
    from ..workload import expected_names

    timeout_s = options.current().worker_timeout_s
    worker = get_worker(spec)
    step_id = next(_IDS)
    names = expected_names(case)
    reply = worker.request({"op": "prepare", "id": step_id, "lane": lane, "case": case.to_dict(),
                            "names": names, "arrays": arrays_of(inputs), "settings": settings,
                            "threads": torch.get_num_threads()}, timeout_s)
    extra = {**reply.get("extra", {}), "peak_mem_bytes": None}  # the runner's torch allocator never saw it
    return WorkerStep(worker, step_id, case.device, extra, timeout_s, names)
