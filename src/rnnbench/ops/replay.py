"""An eager call's launches recorded once and replayed: the floor of a small eager forward.

At the seed suites' small sizes an eager forward is host time: on the H100 the module's TF32
forward at batch 32, hidden 128 took 144.7 µs a call, its own two launches and four allocations
replayed alone 82.6, cuDNN's call 191.7 (``benchmarks/results/h100/call-floor/``). The Python
between them is the checks and decisions of every call (the plan, the path, the buffers, the
arguments' order), the same each time for the same shapes and settings.

A :class:`Replay` is built from one call made through the normal path under
:func:`~rnnbench.ops.launch.recording`: the launches it made (each through its compiled kernel's
direct launcher, :meth:`~rnnbench.ops.launch.KernelLauncher.direct`), where each argument came
from (one of the caller's tensors, a tensor the call allocated, or a number), and how each
returned tensor was made of those allocations. Replaying allocates the same tensors afresh, puts
the new call's tensors and allocations in their places and launches; it returns what the call
would have returned. It is valid for another call only where the normal path would make the same
decisions and launches: the caller (``rnnbench.nn``) checks that (the same shapes, dtypes,
devices, settings, weights; no gradient; 16-byte aligned tensors), and a recording with any work
outside a launcher (a cuBLAS product, a copy) or a tensor neither the caller's nor allocated by
the call (a persistent buffer, such as the barrier counters) gives no replay at all.
"""

from __future__ import annotations

import math
import operator
import threading

import torch

from .launch import _current_stream, _no_launch_hooks, recording  # noqa: F401 (rnnbench.nn records through here)

# Scratch (an allocation no output is made of) up to this size is kept between calls (Replay): a
# torch.empty is host time only where a call is small; a module keeps up to 16 replays.
SCRATCH_KEPT_BYTES = 16 << 20
# Record calls to replay (False: no new recordings, for side-by-side measurements; the replays
# already made are ``rnnbench.nn._REPLAYS``', which the caller drops).
ENABLED = True


class Replay:
    """The recorded launches of one call (see the module docstring). ``replay(inputs)`` with
    ``inputs`` the new call's tensors in the recorded call's order (None where it had None)
    returns the recorded call's outputs' counterparts.

    The call's allocations are of two kinds. Those an output is made of are allocated afresh every
    call (a caller may keep its outputs). The rest are scratch (the input projection): up to
    :data:`SCRATCH_KEPT_BYTES` each, kept and reused by the next call from the same thread on the
    same stream, whose launches the stream orders after the last call's, and allocated afresh for
    any other (or every call, if larger). Each allocation is made just
    before the first launch that takes it, so the first launch leaves while the host allocates the
    rest (on the H100 a ``torch.empty`` took 4-7 µs of host time, a launch 8).

    Build with :meth:`build`."""

    __slots__ = ("launches", "allocations", "slots", "outputs", "scratch", "scratch_places", "cuda", "_scratch")

    def __init__(self, launches, allocations, slots, outputs, scratch_places):
        # per launch: (c_launch, grid3, head, take, tail, fresh) with ``take(values)`` its arguments
        # from ``values`` (the inputs, then ``slots``) and ``fresh`` the allocations it needs first,
        # (values index, shape, dtype, device)
        self.launches = launches
        self.allocations = allocations  # (shape, dtype, device) of each tensor the call allocated
        self.slots = tuple(slots)  # a None in each allocation's place, then the numbers
        self.outputs = outputs  # per output: (values index, (size, stride, offset) or None where whole)
        self.scratch_places = tuple(k for k, _ in scratch_places)  # values index of each scratch tensor
        self.scratch = tuple(a for _, a in scratch_places)  # (shape, dtype, device) of each
        self.cuda = any(device.type == "cuda" for _, _, device in allocations)  # (launches on the current stream)
        self._scratch = (None, ())  # (the (thread, stream) that last used it, the scratch tensors)

    @staticmethod
    def build(records: list, inputs: tuple, outputs: tuple) -> Replay | None:
        """A replay of the call that made ``records`` (:func:`~rnnbench.ops.launch.recording`)
        with ``inputs`` (the caller's tensors, or None) and returned ``outputs`` (tensors); None
        where it cannot be replayed from its launches alone: work outside a launcher, a launch
        without a direct launcher, a tensor neither an input nor a whole contiguous allocation of
        the call, an output not made of one."""
        if not records or any(r is None for r in records):
            return None
        ids = {id(t): k for k, t in enumerate(inputs) if t is not None}
        allocations, made, numbers, launches = [], {}, [], []
        for launcher, grid, args, constexprs, _stream, keyed in records:
            direct = launcher.direct(args, constexprs, keyed)
            if direct is None:
                return None
            c_launch, head, tail = direct
            sources, first = [], []  # sources: ("number", k) until the allocations are all counted
            for a in args:
                if not isinstance(a, torch.Tensor):
                    sources.append(("number", len(numbers)))
                    numbers.append(a)
                elif id(a) in ids:
                    sources.append(ids[id(a)])
                else:
                    if id(a) not in made:
                        if not _whole(a):
                            return None
                        made[id(a)] = len(allocations)
                        allocations.append((tuple(a.shape), a.dtype, a.device))
                        first.append(made[id(a)])
                    sources.append(len(inputs) + made[id(a)])
            launches.append((c_launch, (*grid, 1, 1)[:3], head, sources, tail, first))
        views = []
        for out in outputs:
            base = out if id(out) in made else out._base
            if base is None or id(base) not in made:
                return None
            k = made[id(base)]
            whole = out is base or (tuple(out.shape), out.stride(), out.storage_offset()) == (
                tuple(base.shape), base.stride(), 0)
            views.append((len(inputs) + k, None if whole else (tuple(out.shape), out.stride(), out.storage_offset())))
        returned = {v[0] - len(inputs) for v in views}
        kept = {k for k, (shape, dtype, _) in enumerate(allocations)
                if k not in returned and math.prod(shape) * dtype.itemsize <= SCRATCH_KEPT_BYTES}
        first_number = len(inputs) + len(allocations)
        launches = [(c, g, h, _taker([first_number + s[1] if isinstance(s, tuple) else s for s in sources]), t,
                     tuple((len(inputs) + k, *allocations[k]) for k in first if k not in kept))
                    for c, g, h, sources, t, first in launches]
        scratch = tuple((len(inputs) + k, allocations[k]) for k in sorted(kept))
        return Replay(launches, allocations, [None] * len(allocations) + numbers, tuple(views), scratch)

    def __call__(self, inputs: tuple) -> tuple:
        """Allocate, launch on the current stream, and return the outputs (see the class). On CUDA
        each tensor goes to the launcher as its address: Triton's C launcher takes an integer as the
        pointer itself, where for a tensor it calls ``data_ptr`` and asks the driver
        (``cuPointerGetAttribute``) about it, argument by argument, every launch."""
        cuda = self.cuda
        stream = _current_stream() if cuda else None
        tensors = [*inputs, *self.slots]  # (the allocations' places filled below; then the numbers)
        values = [*[0 if t is None else t.data_ptr() for t in inputs], *self.slots] if cuda else tensors
        owner = (threading.get_ident(), stream)
        kept_owner, scratch = self._scratch  # (one read: another thread may replace it meanwhile)
        if kept_owner != owner:  # a new thread or stream: scratch of its own
            scratch = tuple(torch.empty(shape, dtype=dtype, device=device) for shape, dtype, device in self.scratch)
            self._scratch = owner, scratch
        for k, t in zip(self.scratch_places, scratch):
            tensors[k] = t
            values[k] = t.data_ptr() if cuda else t
        for c_launch, (gx, gy, gz), head, take, tail, fresh in self.launches:
            for k, shape, dtype, device in fresh:
                t = tensors[k] = torch.empty(shape, dtype=dtype, device=device)
                values[k] = t.data_ptr() if cuda else t
            c_launch(gx, gy, gz, stream, *head, *take(values), *tail)
        return tuple(tensors[k] if view is None else tensors[k].as_strided(*view) for k, view in self.outputs)


def _taker(indices: list):
    """``take(values)``: the tuple of ``values`` at ``indices`` (operator.itemgetter, C-level,
    which returns a bare item for one index)."""
    if len(indices) == 1:
        (k,) = indices
        return lambda values: (values[k],)
    return operator.itemgetter(*indices)


def _whole(t: torch.Tensor) -> bool:
    """Whether ``t`` is a whole contiguous allocation of its own (the call's ``torch.empty``)."""
    return (t.is_contiguous() and t.storage_offset() == 0 and t._base is None
            and t.untyped_storage().nbytes() == t.numel() * t.element_size())


def can_replay() -> bool:
    """Whether a call may be recorded or replayed now: :data:`ENABLED`, no launch hook registered
    (a profiler must see every launch through Triton's runner) and no CUDA graph being captured (a
    captured call takes cuBLAS' projection, ``ops/projection.py``)."""
    # (is_initialized, not is_available: a capture needs CUDA initialised, and is_available took
    # 1.9 µs a call on the H100, every replayed call paying it)
    capturing = torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()
    return ENABLED and _no_launch_hooks() and not capturing
