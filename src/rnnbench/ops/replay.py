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

import torch

from .launch import _current_stream, _no_launch_hooks, recording  # noqa: F401 (rnnbench.nn records through here)

# Record calls to replay (False: no new recordings, for side-by-side measurements; the replays
# already made are ``rnnbench.nn._REPLAYS``', which the caller drops).
ENABLED = True


class Replay:
    """The recorded launches of one call (see the module docstring). ``replay(inputs)`` with
    ``inputs`` the new call's tensors in the recorded call's order (None where it had None)
    returns the recorded call's outputs' counterparts.

    Build with :meth:`build`."""

    __slots__ = ("launches", "allocations", "numbers", "outputs", "cuda")

    def __init__(self, launches, allocations, numbers, outputs):
        self.launches = launches  # (c_launch, grid3, head, sources, tail): sources index inputs, allocations, numbers
        self.allocations = allocations  # (shape, dtype, device) of each tensor the call allocated
        self.numbers = numbers  # the launches' integer arguments, after the allocations in ``sources``
        self.outputs = outputs  # per output: (allocation index, size, stride, offset)
        self.cuda = any(device.type == "cuda" for _, _, device in allocations)  # (launches on the current stream)

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
            sources = []  # ("number", k) until the allocations are all counted
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
                    sources.append(len(inputs) + made[id(a)])
            launches.append((c_launch, (*grid, 1, 1)[:3], head, sources, tail))
        first_number = len(inputs) + len(allocations)
        launches = [(c, g, h, [first_number + s[1] if isinstance(s, tuple) else s for s in sources], t)
                    for c, g, h, sources, t in launches]
        shapes = []
        for out in outputs:
            base = out if id(out) in made else out._base
            if base is None or id(base) not in made:
                return None
            shapes.append((made[id(base)], tuple(out.shape), out.stride(), out.storage_offset()))
        return Replay(launches, allocations, tuple(numbers), tuple(shapes))

    def __call__(self, inputs: tuple) -> tuple:
        """Allocate, launch on the current stream, and return the outputs (see the class)."""
        fresh = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype, device in self.allocations]
        values = [*inputs, *fresh, *self.numbers]
        stream = _current_stream() if self.cuda else None
        for c_launch, (gx, gy, gz), head, sources, tail in self.launches:
            c_launch(gx, gy, gz, stream, *head, *[values[s] for s in sources], *tail)
        return tuple(_view(fresh[o[0]], *o[1:]) for o in self.outputs)


def _whole(t: torch.Tensor) -> bool:
    """Whether ``t`` is a whole contiguous allocation of its own (the call's ``torch.empty``)."""
    return (t.is_contiguous() and t.storage_offset() == 0 and t._base is None
            and t.untyped_storage().nbytes() == t.numel() * t.element_size())


def _view(t: torch.Tensor, size, stride, offset) -> torch.Tensor:
    return t if (size, stride, offset) == (tuple(t.shape), t.stride(), 0) else t.as_strided(size, stride, offset)


def can_replay() -> bool:
    """Whether a call may be recorded or replayed now: :data:`ENABLED`, no launch hook registered
    (a profiler must see every launch through Triton's runner) and no CUDA graph being captured (a
    captured call takes cuBLAS' projection, ``ops/projection.py``)."""
    capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
    return ENABLED and _no_launch_hooks() and not capturing
