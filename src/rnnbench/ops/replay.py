"""An eager call's launches recorded once and replayed: the floor of a small eager forward.

At the seed suites' small sizes an eager forward is host time: on the H100 the module's TF32
forward at batch 32, hidden 128 took 144.7 µs a call, its own two launches and four allocations
replayed alone 82.6, cuDNN's call 191.7 (``benchmarks/results/h100/call-floor/``). The Python
between them is the checks and decisions of every call (the plan, the path, the buffers, the
arguments' order), the same each time for the same shapes and settings.

A :class:`Replay` is built from one call made through the normal path under :func:`recording`:
the launches it made (each through its compiled kernel's direct launcher,
:meth:`~rnnbench.ops.launch.KernelLauncher.direct`), where each argument came from (one of the
caller's tensors, a tensor the call allocated, a view of either, a stream's barrier counters, a
slice of a counter pool, or a number), and how each returned tensor was made of those allocations.
Replaying allocates the same tensors afresh (or reuses its scratch), takes fresh pool slices, puts
the new call's tensors and allocations in their places and launches; it returns what the call
would have returned. It is valid for another call only
where the normal path would make the same decisions and launches: the caller checks that
(``rnnbench.nn``: the same shapes, dtypes, devices, settings, weights; 16-byte aligned tensors;
``ops/replayed_layer.py`` for a backward: the same gradients asked and brought), and a recording
that saw any tensor operation but allocations and views (a cuBLAS product, a copy, a fill) or a
tensor of anyone else's (a persistent buffer other than the counters and the pools) gives no
replay at all.
"""

from __future__ import annotations

import contextlib
import math
import operator
import threading

import torch

from torch.utils._python_dispatch import TorchDispatchMode

from . import launch
from .launch import COUNTERS, _current_stream, _no_launch_hooks

# Scratch (an allocation no output is made of) up to this size is kept between calls (Replay): a
# torch.empty is host time only where a call is small; a module keeps up to 16 replays.
SCRATCH_KEPT_BYTES = 16 << 20
# Record calls to replay (False: no new recordings, for side-by-side measurements; the replays
# already made are ``rnnbench.nn._REPLAYS``', which the caller drops).
ENABLED = True
# Make the next call's output allocations (each up to SCRATCH_KEPT_BYTES) at the end of this one,
# after its launches, while the device runs them: between a call's first launch and its next the
# host then only launches (False: each made just before the first launch that takes it, for
# side-by-side measurements).
ALLOCATE_AHEAD = True
# Take those next outputs from an earlier call's where its caller has let go of them (no tensor but
# the replay's own is on their memory: :func:`_unheld`), rather than from the allocator (False:
# each made afresh, for side-by-side measurements). Reused memory is never freed, so an eager
# training step, whose host time every allocation and free adds to, skips both: with every
# allocation of its replays from a ring (an unsafe upper bound), training steps took 0.82-0.89x the
# time on the H100 (results/h100/bounds/bounds-13578a5), this 0.79-0.94x on the H200
# (results/h200/reuse). The price: a replay may hold two calls' outputs beyond those made ahead (each
# at most SCRATCH_KEPT_BYTES), allocated memory to PyTorch, which torch.cuda.empty_cache() cannot
# return while the module keeps its replays; the allocator would have cached most of it anyway.
REUSE = True


class Replay:
    """The recorded launches of one call (see the module docstring). ``replay(inputs)`` with
    ``inputs`` the new call's tensors in the recorded call's order (None where it had None)
    returns the recorded call's outputs' counterparts (None where it returned None), or None
    where a replay bound to a stream (one holding barrier counters) is called on another.

    A launch's tensor is one of the caller's, an allocation of the call, a view of either (the
    same view of the new call's tensor: the caller checks the shapes, which decide it), or the
    current stream's barrier counters (:func:`~rnnbench.ops.launch.counters`, which every kernel
    leaves at zero: the replay keeps the buffer it recorded and runs only on that stream), or a
    slice of a counter pool (:func:`~rnnbench.ops.launch.counted_counters`, whose kernels leave
    it counted: the Gluon forwards'; each call takes a fresh slice of the current stream's pool,
    as the normal path does).

    The call's allocations are of two kinds. Those an output is made of are the call's own (a
    caller may keep its outputs): up to :data:`SCRATCH_KEPT_BYTES` each, they are allocated at the
    end of the call before (:data:`ALLOCATE_AHEAD`), after its launches, while the device runs
    them, and taken by the next call from the same thread on the same stream (any other allocates
    its own). The rest are scratch (the input projection): up to :data:`SCRATCH_KEPT_BYTES` each,
    kept and reused by the next call from the same thread on the same stream, whose launches the
    stream orders after the last call's, and allocated afresh for any other (or every call, if
    larger). With :data:`REUSE` the outputs made ahead are, where they can be, outputs of the two
    calls before that their caller has let go of (:func:`_unheld`: no tensor on their memory but the
    replay's own); the stream orders the new call's writes after whatever the caller queued on them.
    (A caller that hands an output to another stream must keep it until that stream is done with it:
    ``record_stream`` alone is the caching allocator's, which these never return to.) The tensors
    a caller gets are never the replay's own: each output made ahead is a new tensor on the
    replay's memory (``detach()`` of its own, where a view output was an ``as_strided`` each call:
    2.7 µs of host time on the H200's host, ``results/h200/lean-replay``), so nothing a caller does
    to one (a shape changed in place, ``requires_grad_``, an autograd history) reaches a later call,
    and the replay holds nothing a caller was given. Each allocation not made
    ahead or kept is made just before the first launch that takes it, so the first launch leaves
    while the host allocates the rest (on the H100 a ``torch.empty`` took 4-7 µs of host time, a
    launch 8).

    Build with :meth:`build`."""

    __slots__ = ("launches", "allocations", "slots", "returns", "scratch", "scratch_places", "ahead", "ahead_views",
                 "cuda", "stream", "constants", "_kept")

    def __init__(self, launches, allocations, slots, outputs, scratch_places, stream, constants, cuda):
        # per launch: (c_launch, grid3, head, take, tail, fresh, views, counted) with ``take(values)`` its
        # arguments from ``values`` (the inputs, then ``slots``), ``fresh`` the allocations it needs
        # first, (values index, shape, stride, dtype, device, index in ``ahead`` or -1), and ``views`` the
        # views of earlier values it takes, (values index, root index, bytes past the root's start,
        # as_strided's arguments), ``counted`` the pool slices it takes first, (values index, count, device)
        self.launches = launches
        self.allocations = allocations  # (shape, stride, dtype, device) of each tensor the call allocated
        self.slots = tuple(slots)  # None in each allocation's, view's and pool slice's place, the constants, the numbers
        self.scratch_places = tuple(k for k, _ in scratch_places)  # values index of each scratch tensor
        self.scratch = tuple(a for _, a in scratch_places)  # (shape, stride, dtype, device) of each
        ahead = [a for launch in launches for a in launch[5] if a[5] >= 0]  # (in the order ``fresh`` numbers them)
        self.ahead = tuple(a[1:5] for a in ahead)  # (shape, stride, dtype, device) of each allocation made ahead
        # (``outputs``: per output, None or (values index, (size, stride, offset) or None where whole))
        place = {a[0]: j for j, a in enumerate(ahead)}  # values index -> place in ``ahead``
        views = [[] for _ in ahead]  # per place: the outputs made of it, each its view (None: whole)
        returns = []  # per output: None; (True, place, index in that place's views); (False, values index, view)
        for o in outputs:
            if o is None:
                returns.append(None)
            elif o[0] in place:
                views[place[o[0]]].append(o[1])
                returns.append((True, place[o[0]], len(views[place[o[0]]]) - 1))
            else:  # (made by its call, larger than those made ahead)
                returns.append((False, *o))
        self.ahead_views = tuple(tuple(v) for v in views)
        self.returns = tuple(returns)
        self.cuda = cuda  # (launches on the current stream, tensors handed over as addresses)
        self.stream = stream  # the stream its constants belong to (None: any)
        self.constants = constants  # (the buffers themselves, kept alive: the slots may hold their addresses)
        # (the (thread, stream) of the last call, its scratch, the allocations made ahead for its next
        # (:meth:`_own`'s, one a place in ``ahead``), and those of the last two calls, newest first,
        # None where taken again)
        self._kept = (None, (), (), ())

    @staticmethod
    def build(recorded: Recording, inputs: tuple, outputs: tuple) -> Replay | None:
        """A replay of the call that ``recorded`` (:func:`recording`) with ``inputs`` (the caller's
        tensors, or None) and returned ``outputs`` (tensors, or None). None where it cannot be
        replayed from its launches alone: work outside a launcher (any tensor operation but
        allocations and views), a launch without a direct launcher, a tensor neither an input, an
        allocation of the call (whole, contiguous), a view of one (or within an input's memory),
        barrier counters nor a counter pool's slice; an output not made of an allocation; counters
        of more than one stream."""
        records = recorded.launches
        if not records or any(r is None for r in records):
            return None
        ids = {id(t): k for k, t in enumerate(inputs) if t is not None}
        allocations, made, views, constants, numbers, launches = [], {}, [], [], [], []
        counted, slices = [], {}  # (count, device) of each pool slice; id(slice) -> its index
        streams = set()

        def allocation(t, first):  # the index of the call's allocation t (by its storage), made now if new
            at = _storage(t)
            if at not in made:
                made[at] = len(allocations)
                # (its strides as recorded, contiguous: a whole allocation, _whole; torch.empty_strided
                # remakes it in 2.0 µs of host time on the H100 against torch.empty's 3.0, for every
                # output of every replayed call: benchmarks/results/h100/bounds/together-4580f52/alloc_costs.txt)
                allocations.append((tuple(t.shape), t.stride(), t.dtype, t.device))
                first.append(made[at])
            return made[at]

        for launcher, grid, args, constexprs, stream, keyed in records:
            direct = launcher.direct(args, constexprs, keyed)
            if direct is None:
                return None
            c_launch, head, tail = direct
            sources, first, seen, taken = [], [], [], []  # sources: (kind, k) until every kind is counted
            for a in args:
                if not isinstance(a, torch.Tensor):
                    sources.append(("number", len(numbers)))
                    numbers.append(a)
                elif id(a) in ids:
                    sources.append(("input", ids[id(a)]))
                elif launch.is_pool_slice(a):  # (one slice passed twice stays one: the Gluon forwards')
                    if id(a) not in slices:
                        slices[id(a)] = len(counted)
                        counted.append((a.numel(), a.device))
                        taken.append(slices[id(a)])
                    sources.append(("counted", slices[id(a)]))
                elif _is_counters(a):
                    streams.add(stream)
                    if not any(a is c for c in constants):
                        constants.append(a)
                    sources.append(("constant", next(k for k, c in enumerate(constants) if c is a)))
                elif recorded.allocated_whole(a):
                    sources.append(("allocation", allocation(a, first)))
                else:
                    base = a._base
                    if base is not None and base.dtype == a.dtype and id(base) in ids:
                        root = ("input", ids[id(base)])
                    elif base is not None and base.dtype == a.dtype and recorded.allocated_whole(base):
                        root = ("allocation", allocation(base, first))
                    else:  # (a view of an input that is itself a view: its base is the input's base)
                        k = _holding_input(a, inputs)
                        if k is None:
                            return None
                        root, base = ("input", k), inputs[k]
                    seen.append(len(views))
                    sources.append(("view", len(views)))
                    views.append((*root, a.data_ptr() - base.data_ptr(),
                                  (tuple(a.shape), a.stride(), a.storage_offset() - base.storage_offset())))
            launches.append((c_launch, (*grid, 1, 1)[:3], head, sources, tail, first, seen, taken))
        if len(streams) > 1:
            return None
        shapes = []
        for out in outputs:
            if out is None:
                shapes.append(None)
                continue
            k = made.get(_storage(out))
            if k is None:
                return None
            base = recorded.allocated[_storage(out)]
            view = (tuple(out.shape), out.stride(), out.storage_offset())
            shapes.append((k, None if view == (tuple(base.shape), base.stride(), 0) else view))
        # Where each kind's values lie: inputs, allocations, views, pool slices, constants, numbers.
        start = {"input": 0, "allocation": len(inputs)}
        start["view"] = start["allocation"] + len(allocations)
        start["counted"] = start["view"] + len(views)
        start["constant"] = start["counted"] + len(counted)
        start["number"] = start["constant"] + len(constants)
        place = lambda kind, k: start[kind] + k  # noqa: E731
        returned = {o[0] for o in shapes if o is not None}
        # (allocations kept between calls: scratch, and outputs made ahead)
        small = {k for k, (shape, _, dtype, _) in enumerate(allocations)
                 if math.prod(shape) * dtype.itemsize <= SCRATCH_KEPT_BYTES}
        kept = small - returned
        built, ahead = [], 0
        for c, g, h, sources, t, first, seen, taken in launches:
            fresh = []
            for k in (k for k in first if k not in kept):
                fresh.append((place("allocation", k), *allocations[k], ahead if k in small else -1))
                ahead += k in small
            fresh = tuple(fresh)
            its_views = tuple((place("view", v), place(*views[v][:2]), views[v][2], views[v][3]) for v in seen)
            its_slices = tuple((place("counted", k), *counted[k]) for k in taken)
            built.append((c, g, h, _taker([place(*s) for s in sources]), t, fresh, its_views, its_slices))
        cuda = any(device.type == "cuda" for *_, device in allocations)
        slots = ([None] * (len(allocations) + len(views) + len(counted)) + [c.data_ptr() if cuda else c for c in constants]
                 + numbers)
        outputs_at = tuple(None if o is None else (place("allocation", o[0]), o[1]) for o in shapes)
        scratch = tuple((place("allocation", k), allocations[k]) for k in sorted(kept))
        return Replay(built, allocations, slots, outputs_at, scratch, next(iter(streams)) if streams else None,
                      tuple(constants), cuda)

    def __call__(self, inputs: tuple) -> tuple | None:
        """Allocate, launch on the current stream, and return the outputs (see the class). On CUDA
        each tensor goes to the launcher as its address: Triton's C launcher takes an integer as the
        pointer itself, where for a tensor it calls ``data_ptr`` and asks the driver
        (``cuPointerGetAttribute``) about it, argument by argument, every launch."""
        cuda = self.cuda
        stream = _current_stream() if cuda else None
        if self.stream is not None and stream != self.stream:
            return None
        tensors = [*inputs, *self.slots]  # (the allocations' places filled below; then the numbers)
        values = [*[0 if t is None else t.data_ptr() for t in inputs], *self.slots] if cuda else tensors
        owner = (threading.get_ident(), stream)
        kept_owner, scratch, made, earlier = self._kept  # (one read: another thread may replace it meanwhile)
        if kept_owner != owner:  # a new thread or stream: scratch of its own, nothing made ahead
            earlier = ()
            scratch = tuple([torch.empty_strided(shape, stride, dtype=dtype, device=device)
                             for shape, stride, dtype, device in self.scratch])
            made = ()
        for k, t in zip(self.scratch_places, scratch):
            tensors[k] = t
            values[k] = t.data_ptr() if cuda else t
        owned = made or [None] * len(self.ahead)  # (this call's, :meth:`_own`'s, one a place in ``ahead``)
        for c_launch, (gx, gy, gz), head, take, tail, fresh, views, counted in self.launches:
            for k, count, device in counted:  # (a fresh slice of the current stream's pool, as the call took)
                t = tensors[k] = _counted_counters(count, device)
                values[k] = t.data_ptr() if cuda else t
            for k, shape, stride, dtype, device, j in fresh:
                if j < 0:
                    t = tensors[k] = torch.empty_strided(shape, stride, dtype=dtype, device=device)
                    values[k] = t.data_ptr() if cuda else t
                    continue
                if not made:
                    owned[j] = self._own(j)
                tensors[k], _, values[k], _, _ = owned[j]
            for k, root, offset, strided in views:
                values[k] = values[root] + offset if cuda else _view_of(tensors[root], *strided)
            c_launch(gx, gy, gz, stream, *head, *take(values), *tail)
        # (the next call's outputs, while the device runs this one's; each made is this call's only)
        if ALLOCATE_AHEAD:
            made = self._next_outputs(earlier)
            earlier = (owned, *earlier[:1]) if REUSE else ()
        else:
            made = earlier = ()
        self._kept = owner, scratch, made, earlier
        return tuple([None if r is None else owned[r[1]][4][r[2]].detach() if r[0]
                      else tensors[r[1]] if r[2] is None else tensors[r[1]].as_strided(*r[2]) for r in self.returns])

    def _own(self, j: int) -> tuple:
        """A new allocation for place ``j`` in ``ahead``: ``(tensor, its storage, its address (the
        tensor itself off CUDA), the storage's use count while nothing but these refers to it, the
        tensors of the outputs made of it (:attr:`ahead_views`))``, each kept by the replay and
        never handed out (a call's outputs are ``detach()`` of these)."""
        shape, stride, dtype, device = self.ahead[j]
        base = torch.empty_strided(shape, stride, dtype=dtype, device=device)
        returned = tuple([base if view is None else base.as_strided(*view) for view in self.ahead_views[j]])
        storage = base.untyped_storage()
        return base, storage, base.data_ptr() if self.cuda else base, _storage_use_count(storage._cdata), returned

    def _next_outputs(self, earlier: tuple) -> list:
        """The next call's output allocations, one per place in ``ahead``: where :data:`REUSE`, one
        of ``earlier``'s (the older call's first) that :func:`_unheld` finds let go of, taken out of
        it; else a new one (:meth:`_own`)."""
        made = []
        for j in range(len(self.ahead)):
            for owned in reversed(earlier):
                if owned[j] is not None and _unheld(owned[j]):
                    made.append(owned[j])
                    owned[j] = None
                    break
            else:
                made.append(self._own(j))
        return made


_storage_use_count = torch._C._storage_Use_Count
_counted_counters = launch.counted_counters


def _unheld(owned: tuple) -> bool:
    """Whether no tensor but the replay's own is on the memory of ``owned`` (:meth:`Replay._own`):
    its storage's use count is what it was when made. Every tensor on a storage counts in it (a
    caller's output, a view or alias of one, autograd's saved tensors, a DLPack capsule's: C++
    owners hold the tensor), and nothing else does but the storage object the replay keeps."""
    return _storage_use_count(owned[1]._cdata) == owned[3]


def _holding_input(view: torch.Tensor, inputs: tuple) -> int | None:
    """The index of an input of ``view``'s dtype whose memory holds all of ``view``'s, or None. A
    launch's view of an input (``x.reshape(...)``) has the input's base as its own, not the input,
    where the input is a view itself: a stacked module's layer takes the layer below's output, a
    view into its hidden states."""
    start, end = _bytes(view)
    for k, t in enumerate(inputs):
        if t is not None and t.dtype == view.dtype and t.device == view.device and _storage(t) == _storage(view):
            low, high = _bytes(t)
            if low <= start and end <= high:
                return k
    return None


def _bytes(t: torch.Tensor) -> tuple[int, int]:
    """The address of ``t``'s first element and one past its last (``start == end`` when empty)."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    span = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return start, start + span * t.element_size()


def _view_of(root: torch.Tensor, size, stride, offset) -> torch.Tensor:
    return root.as_strided(size, stride, root.storage_offset() + offset)


def _is_counters(t: torch.Tensor) -> bool:
    """Whether ``t`` is a stream's barrier counters (:func:`~rnnbench.ops.launch.counters`)."""
    return any(t is c for c in COUNTERS.values())


# Tensor operations a recorded call may make besides its launches: allocations (and views, any op
# whose output is a view of its input). Anything else is device work no launch replays.
_ALLOCATIONS = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
                torch.ops.aten.empty_like.default, torch.ops.aten.new_empty.default,
                torch.ops.aten.new_empty_strided.default}


class Recording:
    """What :func:`recording` saw: the launches (:func:`~rnnbench.ops.launch.recording`'s records,
    None for work outside a launcher) and the tensors the call allocated (by their storage: the
    tensor a caller holds may be another object on the same storage than the allocation's own)."""

    def __init__(self, launches: list):
        self.launches = launches
        # storage address -> tensor (kept alive, so no other tensor can have that address meanwhile)
        self.allocated: dict[int, torch.Tensor] = {}

    def allocated_whole(self, t: torch.Tensor) -> bool:
        """Whether the call allocated ``t``'s storage, and ``t`` is the whole of it, contiguous."""
        return t.numel() > 0 and _storage(t) in self.allocated and _whole(t)


class _OnlyLaunches(TorchDispatchMode):
    """Notes the tensors a recorded call allocates, and any tensor operation but an allocation or
    a view as work outside a launcher (:func:`~rnnbench.ops.launch.note_unrecorded`): a recorded
    call's Python may do anything, and only what its launches did can be replayed."""

    def __init__(self, recorded: Recording):
        super().__init__()
        self.recorded = recorded

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in _ALLOCATIONS:
            self.recorded.allocated[_storage(out)] = out
        elif not func.is_view:
            launch.note_unrecorded()
        return out


@contextlib.contextmanager
def recording(device: torch.device | None = None):
    """Within the block, every launch is recorded (:func:`~rnnbench.ops.launch.recording`), every
    allocation noted, and any other tensor operation but a view marks the recording unreplayable (a
    copy, a matmul, a fill: device work that no launch would redo). Yields the :class:`Recording`
    for :meth:`Replay.build`. Given a CUDA ``device``, the current stream's barrier counters and
    counter pool are made first (:func:`~rnnbench.ops.launch.counters`,
    :func:`~rnnbench.ops.launch.counted_pool`): made inside, their fill would refuse the first
    recording of a process on that stream."""
    if device is not None and device.type == "cuda":
        launch.counters(1, device)
        launch.counted_pool(device)  # (made inside, its fill would refuse the recording too)
    with launch.recording() as launches:
        recorded = Recording(launches)
        with _OnlyLaunches(recorded):
            yield recorded


def _taker(indices: list):
    """``take(values)``: the tuple of ``values`` at ``indices`` (operator.itemgetter, C-level,
    which returns a bare item for one index)."""
    if len(indices) == 1:
        (k,) = indices
        return lambda values: (values[k],)
    return operator.itemgetter(*indices)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


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
    capturing = torch.cuda.is_initialized() and torch._C._cuda_isCurrentStreamCapturing()
    return ENABLED and _no_launch_hooks() and not capturing


def aligned(tensors) -> bool:
    """Whether every tensor (None skipped) is contiguous and starts on a 16-byte boundary, as a
    recording's must have for a replay to stand in for the call (its kernels were specialised on
    aligned pointers). (A plain loop: every eager call that may replay pays for it, and on the
    H100 the replay key took 11.5 µs a call with generators and a reduce here, 7.7 with this:
    call-floor/suite-8366dc7, lean-7de6361.)"""
    pointers = 0
    for t in tensors:
        if t is None:
            continue
        if not t.is_contiguous():
            return False
        pointers |= t.data_ptr()
    return not pointers & 15
