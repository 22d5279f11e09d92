"""Launching a Triton kernel with less host time per call.

``kernel[grid](*args, **constexprs)`` is Triton's JIT launch: on every call it binds each
argument to its parameter, works out the specialisation (dtype and 16-byte alignment of every
pointer), turns the options into a cache key and looks the compiled kernel up. A
:class:`KernelLauncher` does that once per specialisation: it keeps the compiled kernel that the
first JIT launch returns and launches it directly afterwards (``CompiledKernel[grid](*args)``,
Triton's own launcher for a compiled kernel), keyed by what the JIT would specialise on here: the
constexpr values and the plan the caller allocates its buffers by (numbered once,
:class:`Constexprs`), the dtype and alignment of the tensors that can vary (the caller's, not the
buffers it allocates), the device. The measured saving is in
docs/kernels.md ("Host time per call", "A leaner eager call").

It is only valid for kernels whose integer arguments are never specialised (``do_not_specialize``:
the JIT would compile other variants for values 1 or multiples of 16) and that take their tensors
before their integers (the key reads the leading tensors); the launcher checks both once per
kernel and raises otherwise. Under ``TRITON_INTERPRET=1`` there is no compiled kernel and
every call is the JIT's.

Under Triton 3.6 (the version measured) the launch goes one step further down: to the compiled
kernel's C launcher (``CudaLauncher.launch``, Triton's own), with the arguments its Python runner
would give it. The runner costs host time on every call for what our kernels never use: a
``LazyDict`` of launch metadata and two empty hook chains called from C (3.6 calls
``knobs.runtime.launch_enter_hook`` even when nothing is registered), a closure per grid, and the
scratch allocations. The C launcher's arguments are Triton's internal interface (3.9 orders them
differently), so any other version, a kernel with scratch memory, or a registered launch hook (a
profiler's) keeps the runner.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import torch
import triton
from triton import knobs

from .common import INTERPRET

# Launch through Triton's JIT every time (the first design); for the side-by-side measurement.
JIT_ONLY = False
# Call the compiled kernel's C launcher directly where this Triton's is known (False: through
# Triton's Python runner, as before; for the side-by-side measurement).
DIRECT_LAUNCH = True
# The Triton versions whose C launcher takes the arguments _c_launcher gives it.
C_LAUNCHER_VERSIONS = ("3.6.",)
# Launch a forward on FMA units by programmatic dependent launch (CUDA's PDL, sm_90 on) after the
# input projection, which lets it start while the projection's programs run: it loads its weights,
# then waits (``griddepcontrol.wait``) before its first read of the projection (False: a plain
# launch, for side-by-side measurements; see :func:`dependent_launch`).
PDL = True


# While a call is recorded (:func:`recording`): every launch made, in order, as ``(launcher, grid,
# args, constexprs, stream, keyed)``, and None for work done outside a launcher (a torch call
# that :func:`note_unrecorded` reports), which makes the recording unfit to replay.
_RECORDING: contextvars.ContextVar[list | None] = contextvars.ContextVar("rnnbench_recording", default=None)


@contextlib.contextmanager
def recording():
    """Within the block, every :class:`KernelLauncher` launch is appended to the list yielded (and
    launched as usual): ``(launcher, grid, args, constexprs, stream, keyed)``; for
    ``ops/replay.py``."""
    token = _RECORDING.set([])
    try:
        yield _RECORDING.get()
    finally:
        _RECORDING.reset(token)


def note_launch(launcher, grid, args: tuple, constexprs, stream, keyed) -> None:
    """A launch about to be made, for a recording in progress (every :class:`KernelLauncher` call
    reports its own)."""
    recorded = _RECORDING.get()
    if recorded is not None:
        recorded.append((launcher, grid, args, constexprs, stream, keyed))


def note_unrecorded() -> None:
    """Device work outside a launcher happened (a cuBLAS product, a copy): a recording in progress
    can no longer be replayed by its launches alone."""
    recorded = _RECORDING.get()
    if recorded is not None:
        recorded.append(None)


def _specialisation(tensors: tuple) -> tuple:
    """What the JIT specialises a call on, for the arguments it can vary in here: each tensor's
    dtype and whether its address is a multiple of 16 (Triton's ``tt.divisibility``); integers
    are never specialised (checked in :meth:`KernelLauncher._check_integers`)."""
    return tuple([(a.dtype, not a.data_ptr() & 15) for a in tensors])


class Constexprs:
    """A kernel's compile-time arguments and launch options (``num_warps``, ``num_stages``) by
    name, built once per plan and flags and kept by the caller. Equal values of equal ``plan``
    get one ``number``, which the launch's cache key holds instead of the values (hashing a tuple
    of twenty of them on every call is host time).

    ``plan``: what the caller allocates the launch's buffers by (a recurrence's ``Plan``; any
    hashable value, None for none), which the kernel is not passed. It enters the number because a
    buffer's dtype may be the plan's alone: ``Plan.half_saved`` stores a forward's saved gates in
    16 bits or in fp32 under the same compile-time values, and a key without it launched the fp32
    variant on 16-bit gates (an illegal address on the H200, docs/kernels.md "The gates saved in
    16 bits")."""

    __slots__ = ("values", "number")
    _NUMBERS: dict[tuple, int] = {}

    def __init__(self, values: dict, plan=None):
        self.values = values
        self.number = Constexprs._NUMBERS.setdefault((tuple(sorted(values.items())), plan), len(Constexprs._NUMBERS))


def _leading_tensors(args: tuple) -> int:
    """How many arguments come before the first one that is not a tensor."""
    return next((i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)), len(args))


class KernelLauncher:
    """``launcher(grid, args, constexprs)`` launches ``fn`` as ``fn[grid](*args, **constexprs.values)``
    would, with ``args`` the positional runtime arguments (tensors, then integers) and
    ``constexprs`` the compile-time ones (:class:`Constexprs`).

    Raises:
        TypeError: ``fn`` has an integer parameter that Triton would specialise on its value, or a
            tensor after an integer.
    """

    def __init__(self, fn):
        self.fn = fn
        self._compiled: dict[tuple, tuple] = {}
        self._integers_checked = False
        self._tensors = 0  # runtime arguments before the first integer (set by the first call)

    def __call__(self, grid, args: tuple, constexprs: Constexprs, stream=None, keyed: int | None = None) -> None:
        """``stream``: the raw CUDA stream Triton would launch on (its driver's current stream),
        when the caller has it already; None to let Triton ask its driver again. ``keyed``: how
        many leading tensors decide the specialisation (all of them when None). A caller passes
        fewer only when the rest are buffers it has just allocated (the caching allocator aligns
        every block to 512 bytes) in dtypes that the keyed tensors and ``constexprs`` (its values and
        its plan) decide."""
        note_launch(self, grid, args, constexprs, stream, keyed)
        if INTERPRET or JIT_ONLY:
            self.fn[grid](*args, **constexprs.values)
            return
        key = self._key(args, constexprs, keyed)
        entry = self._compiled.get(key)
        if entry is not None:
            kernel, tail, direct = entry
            if direct is not None and DIRECT_LAUNCH and _no_launch_hooks():
                c_launch, head = direct
                grid3 = (*grid, 1, 1)
                c_launch(grid3[0], grid3[1], grid3[2], _current_stream() if stream is None else stream, *head,
                         *args, *tail)
                return
            launch = kernel[(*grid, 1, 1)[:3]]  # the compiled kernel's launcher wants 3 grid sizes
            if stream is None:
                launch(*args, *tail)
            else:
                launch(*args, *tail, stream=stream)
            return
        self._tensors = self._tensors or _leading_tensors(args)  # our kernels take their tensors first, then T and B
        self._check_integers(args)
        kernel = self.fn[grid](*args, **constexprs.values)  # compiles (or loads Triton's cache) and launches
        names = self.fn.arg_names[len(args):]
        self._compiled[key] = (kernel, tuple(constexprs.values[n] for n in names), _c_launcher(kernel))

    def _key(self, args: tuple, constexprs: Constexprs, keyed: int | None) -> tuple:
        """The compiled entry's key for these arguments (see :meth:`__call__`)."""
        tensors = self._tensors or _leading_tensors(args)
        return constexprs.number, _specialisation(args[:tensors if keyed is None else keyed]), args[0].device.index

    def direct(self, args: tuple, constexprs: Constexprs, keyed: int | None = None) -> tuple | None:
        """``(c_launch, head, tail)`` of the compiled kernel these arguments were launched with
        (``c_launch(gx, gy, gz, stream, *head, *args, *tail)`` launches it), or None where there
        is no direct launch (not compiled yet, another Triton, the interpreter)."""
        if INTERPRET or JIT_ONLY or not DIRECT_LAUNCH:
            return None
        entry = self._compiled.get(self._key(args, constexprs, keyed))
        if entry is None or entry[2] is None:
            return None
        kernel, tail, (c_launch, head) = entry
        return c_launch, head, tail

    def _check_integers(self, args: tuple) -> None:
        if self._integers_checked:
            return
        unspecialised = _unspecialised(self.fn)
        first_integer = _leading_tensors(args)
        late = [n for n, a in zip(self.fn.arg_names[first_integer:], args[first_integer:])
                if isinstance(a, torch.Tensor)]
        if late:
            raise TypeError(f"{self.fn.__name__}: tensor {late[0]!r} comes after an integer; a KernelLauncher "
                            "keys a launch on the leading tensors only")
        for name, value in zip(self.fn.arg_names, args):
            if not isinstance(value, torch.Tensor) and name not in unspecialised:
                raise TypeError(f"{self.fn.__name__}: parameter {name!r} is specialised on its value; "
                                "a KernelLauncher would reuse one variant for every value")
        self._integers_checked = True


def _c_launcher(kernel) -> tuple | None:
    """``(launch, head)``: the compiled kernel's C launcher and the arguments Triton 3.6's runner
    gives it between the stream and the kernel's own (function, cooperative and PDL flags, no
    scratch buffers, the packed metadata, no launch metadata, no hooks); None where that is not
    known to hold (another Triton, a launcher of another backend, a kernel with scratch memory)."""
    if not triton.__version__.startswith(C_LAUNCHER_VERSIONS):
        return None
    run = kernel.run  # loads the binary and builds the launcher (the first launch did already)
    if type(run).__name__ != "CudaLauncher" or run.global_scratch_size or run.profile_scratch_size:
        return None
    head = (kernel.function, run.launch_cooperative_grid, run.launch_pdl, None, None, kernel.packed_metadata,
            None, None, None)
    return run.launch, head


def dependent_launch(device: torch.device) -> bool:
    """Whether launches on ``device`` use programmatic dependent launch (:data:`PDL`): CUDA, compute
    capability 9.0 or later (``griddepcontrol`` is sm_90's PTX), not the interpreter. A kernel
    launched so may start before the launch ahead of it on the stream has finished; it must wait
    (``common._wait_prior``) before it reads anything that launch writes, or writes anything it
    reads. Everything older on the stream finished before that launch began, so it may read the
    rest at once."""
    return PDL and not INTERPRET and device.type == "cuda" and _capability(device.index) >= (9, 0)


@functools.lru_cache(maxsize=None)
def _capability(index: int | None) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)


def capturing(t: torch.Tensor) -> bool:
    """Whether ``t`` is on CUDA and a CUDA graph is being captured on the current stream: where a
    call's host time does not recur, so choices made by size for host time (``ops/projection.py``,
    ``ops/gradients.py``) differ."""
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _no_launch_hooks() -> bool:
    """Whether no launch hook is registered (a profiler such as Proton registers them; then every
    launch goes through Triton's runner, which gives them their metadata)."""
    return _empty_hook(knobs.runtime.launch_enter_hook) and _empty_hook(knobs.runtime.launch_exit_hook)


def _empty_hook(hook) -> bool:
    return hook is None or not getattr(hook, "calls", True)


# torch's own functions that Triton's driver gives the current stream by (``driver.active``'s
# ``get_current_stream`` of ``get_current_device``, which are these behind a lazy proxy and
# ``torch.cuda.current_device``'s initialisation check): 0.36 and 0.84 µs of host time through the
# driver on two H200 leases' hosts, every replayed call and direct launch paying it
# (results/h200/lean-replay, ``parts.txt``). Absent from CPU builds of torch, where nothing asks
# for a stream.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_device_index = getattr(torch._C, "_cuda_getDevice", None)


def _current_stream() -> int:
    """The raw CUDA stream Triton's runner would launch on: the current device's current stream
    (CUDA already initialised, as for any caller holding CUDA tensors)."""
    return _raw_stream(_device_index())


def _unspecialised(fn) -> set[str]:
    """Names of ``fn``'s ``do_not_specialize`` parameters (a JIT function, or the interpreter's
    stand-in for one, which keeps the decorator's arguments)."""
    params = getattr(fn, "params", None)
    if params is not None:
        return {p.name for p in params if p.do_not_specialize}
    given = fn.kwargs.get("do_not_specialize") or ()
    return {fn.arg_names[n] if isinstance(n, int) else n for n in given}


# One counter buffer per (device, stream): see counters.
COUNTERS: dict[tuple, torch.Tensor] = {}
# Buffers a larger one replaced. A CUDA graph captured before the growth still launches on the old
# one, so it is never freed: freed, its memory could leave the process (``torch.cuda.graph`` empties
# the allocator's cache before every capture) and that graph's next replay would fault.
RETIRED: list[torch.Tensor] = []
# Counters of a new buffer at least (16 KB): the weight gradients' split products take one per
# tile and slice, several hundred for a large layer, so few buffers ever grow.
MIN_COUNTERS = 4096


def launch_stream(device: torch.device) -> int | None:
    """The raw CUDA stream a launch on ``device`` goes to (None off CUDA), for kernels that take no
    barrier counters (the FMA RNN's, the Gluon forwards'): :func:`counters` without the buffer."""
    return _current_stream() if device.type == "cuda" else None


def counters(count: int, device: torch.device) -> tuple[torch.Tensor, int | None]:
    """At least ``count`` int32 counters, zero, and the raw CUDA stream they belong to (None under
    the interpreter), which the launch reuses: the recurrences' barriers (arrivals ``[0, NB)`` and
    exits ``[NB, 2 NB)``, one each per batch block) and the weight gradients' split products (one
    per output tile, ``ops/gradients.py``). Every kernel leaves them at zero when it finishes
    (``common._release_counters``; the last slice of a tile resets its own), so on CUDA one buffer
    per device and stream serves every launch without a memset; launches on one stream run one
    after another, so two never share a counter at once. A buffer too small for ``count`` is
    replaced and kept (:data:`RETIRED`). Under the interpreter a fresh buffer each call (an
    interpreted kernel stopped at a barrier leaves its counts behind)."""
    if device.type != "cuda":
        return torch.zeros(count, dtype=torch.int32, device=device), None
    # The stream Triton launches on, asked of Triton's driver as its launcher does (cheaper than
    # torch.cuda.current_stream(device), which builds a Stream object and resolves the device).
    stream = _current_stream()
    key = (device, stream)
    buf = COUNTERS.get(key)
    if buf is None or buf.numel() < count:
        if buf is not None:
            RETIRED.append(buf)
        buf = torch.zeros(max(count, MIN_COUNTERS), dtype=torch.int32, device=device)
        COUNTERS[key] = buf
    return buf, stream


# Counters of a pool for the kernels that leave their counters counted (the Gluon forwards:
# ``ops/gluon_common.py``, whose exit count cost them their registers): 16 KB per device and stream.
COUNTED_POOL = 4096
# Slices start on 16-byte boundaries (4 counters): the kernels were compiled for the first launch's
# fresh buffer, which Triton saw as 16-byte aligned, and KernelLauncher does not key on buffers.
COUNTED_ALIGN = 4


class CounterPool:
    """Zeroed int32 counters handed out a slice at a time from one buffer, the whole buffer zeroed
    again (one memset, stream-ordered after every kernel that counted in it) once a slice no longer
    fits: one memset every few thousand calls instead of a ``torch.zeros`` a call, which costs 8-12
    µs of host time (docs/kernels.md, "A layer's gradients in one launch") on calls of 0.1 ms."""

    def __init__(self, size: int, device: torch.device):
        self.buffer = torch.zeros(size, dtype=torch.int32, device=device)
        self.free = 0  # the first counter not handed out since the last zeroing
        # Each slice made once and handed out again after every zeroing: making a view of a tensor
        # cost 3.6 µs of host time on an H100 machine, a whole counted_counters call 2.9, a
        # torch.zeros 15.6 (results/h100/seeds-fa1ecbf/gluon-eager/eager_host-a9ec577.jsonl).
        self._slices: dict[tuple[int, int], torch.Tensor] = {}

    def take(self, count: int) -> torch.Tensor:
        """``count`` counters, zero until a kernel on this pool's stream counts in them, starting
        :data:`COUNTED_ALIGN` counters (16 bytes) past the buffer's start or a multiple of that.

        Raises:
            ValueError: ``count`` is more than the pool holds.
        """
        if count > self.buffer.numel():
            raise ValueError(f"{count} counters asked of a pool of {self.buffer.numel()}")
        if self.free + count > self.buffer.numel():
            self.buffer.zero_()
            self.free = 0
        start = self.free
        self.free = min(self.buffer.numel(), -(-(start + count) // COUNTED_ALIGN) * COUNTED_ALIGN)
        piece = self._slices.get((start, count))
        if piece is None:
            piece = self._slices[start, count] = self.buffer[start:start + count]
        return piece


POOLS: dict[tuple, CounterPool] = {}


def counted_counters(count: int, device: torch.device) -> torch.Tensor:
    """``count`` zeroed int32 counters for one launch of a kernel that leaves them counted. On
    CUDA, eagerly, a slice of the current stream's :class:`CounterPool` (launches on one stream run
    one after another, so slices handed out since the last zeroing are never counted in twice);
    while a CUDA graph is being captured, or off CUDA, a fresh zeroed tensor, whose memset every
    replay repeats (a pool's slice would be captured once and replayed already counted)."""
    if device.type != "cuda" or torch.cuda.is_current_stream_capturing():
        return torch.zeros(count, dtype=torch.int32, device=device)
    return counted_pool(device, count).take(count)


def counted_pool(device: torch.device, count: int = 0) -> CounterPool:
    """The current stream's :class:`CounterPool` on CUDA ``device``, made (or replaced by a larger
    one) where it has none of at least ``count`` counters."""
    key = (device, _current_stream())
    pool = POOLS.get(key)
    if pool is None or pool.buffer.numel() < count:
        pool = POOLS[key] = CounterPool(max(count, COUNTED_POOL), device)
    return pool


def is_pool_slice(t: torch.Tensor) -> bool:
    """Whether ``t`` is a slice of a :class:`CounterPool` (:func:`counted_counters`' on CUDA)."""
    base = t._base
    return base is not None and any(base is pool.buffer for pool in POOLS.values())
