"""The cached launch (ops/launch.py) is only right for kernels that Triton never specialises on an
integer's value: it refuses any other, and every kernel the recurrence launches through it passes."""

from __future__ import annotations

import inspect

import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")
tl = pytest.importorskip("triton.language")

from rnnbench.ops import aot, recurrence  # noqa: E402
from rnnbench.ops.launch import KernelLauncher  # noqa: E402


@triton.jit
def _specialised(x_ptr, n):
    pass


@triton.jit(do_not_specialize=["n"])
def _not_specialised(x_ptr, n):
    pass


def test_refuses_a_kernel_specialised_on_an_integer():
    with pytest.raises(TypeError, match="'n'"):
        KernelLauncher(_specialised)._check_integers((torch.zeros(1), 5))
    KernelLauncher(_not_specialised)._check_integers((torch.zeros(1), 5))


@triton.jit(do_not_specialize=["n"])
def _tensor_after_integer(x_ptr, n, y_ptr):
    pass


def test_refuses_a_tensor_after_an_integer():
    """The launch key reads only the leading tensors, so a later one could be left out of it."""
    with pytest.raises(TypeError, match="'y_ptr' comes after an integer"):
        KernelLauncher(_tensor_after_integer)._check_integers((torch.zeros(1), 5, torch.zeros(1)))


def test_every_recurrence_kernel_takes_the_cached_launch():
    launchers = [v for v in vars(recurrence).values() if isinstance(v, KernelLauncher)]
    # a forward and a backward per cell family, the LSTM's and GRU's split-K backwards, the RNN's
    # forward and backward on FMA units, the LSTM's and GRU's forwards and backwards in slices (and the
    # Gluon forwards where this Triton has Gluon)
    gluon = sum(isinstance(getattr(recurrence, n), KernelLauncher) for n in ("_LSTM_FORWARD_GLUON", "_GRU_FORWARD_GLUON"))
    assert len(launchers) == 2 * len({"lstm", "gru", "rnn"}) + 2 + 2 + 2 + 2 + gluon
    for launcher in launchers:
        params = inspect.signature(launcher.fn.fn).parameters.values()
        runtime = [p.name for p in params if p.annotation not in (tl.constexpr, "tl.constexpr")]
        args = tuple(torch.zeros(1) if name.endswith("_ptr") else 3 for name in runtime)
        launcher._check_integers(args)  # raises for an integer Triton would specialise


@pytest.mark.parametrize("fields", [{}, {"h_on_chip": False}, {"split_k": True}, {"w_resident": False, "gate_split": True},
                                    {"w_resident": False, "h_on_chip": False, "forward_pieces": 2},
                                    {"w_resident": False, "h_on_chip": False, "split_k": False, "backward_pieces": 2}],
                         ids=["on_chip", "transpose", "split_k", "gate_split", "slices", "backward_slices"])
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_every_launch_gives_every_constexpr_its_kernel_takes(cell, fields, interpreter, monkeypatch):
    """A cached launch passes the compiled kernel every constexpr by value, read from its
    Constexprs by the kernel's parameter names (``KernelLauncher``'s tail): one that the meta leaves
    to its default in the signature would raise KeyError there, on CUDA only (the interpreter calls
    the JIT with keywords, defaults filled in). Forward and backward of a layer, on each plan."""
    if cell.startswith("rnn_") and ("split_k" in fields or "gate_split" in fields):
        pytest.skip(f"no such backward for {cell}")
    if cell.startswith("rnn_") and "forward_pieces" in fields:
        pytest.skip(f"no forward in slices for {cell}")
    if cell.startswith("rnn_") and "backward_pieces" in fields:
        pytest.skip(f"no backward in slices for {cell}")
    launched = []
    monkeypatch.setattr(KernelLauncher, "__call__", lambda self, grid, args, constexprs, stream=None, keyed=None:
                        launched.append((self.fn, constexprs)))
    gates, (b, t, h) = recurrence.NUM_GATES[cell], (3, 2, 8)
    x, w_ih, w_hh = (torch.randn(*shape, requires_grad=True) for shape in ((t, b, 5), (gates * h, 5), (gates * h, h)))
    with recurrence.plan_override(**fields):
        out, h_n, _ = recurrence.recurrent_layer(cell, x, None, None, w_ih, w_hh)
        out.sum().backward()
    kernels = {fn.__name__ for fn, _ in launched}
    assert any("backward" in name for name in kernels) and any("forward" in name for name in kernels), kernels
    assert (f"{cell}_forward_pieces_kernel" in kernels) == ("forward_pieces" in fields), kernels
    assert (f"{cell}_backward_pieces_kernel" in kernels) == ("backward_pieces" in fields), kernels
    for fn, constexprs in launched:
        wanted = [p.name for p in inspect.signature(fn.fn).parameters.values()
                  if p.annotation in (tl.constexpr, "tl.constexpr")]
        assert set(wanted) <= set(constexprs.values), (fn.__name__, set(wanted) - set(constexprs.values))


@pytest.mark.parametrize("fma", [True, False], ids=["fma", "tensor_cores"])
def test_only_a_forward_on_fma_units_is_launched_dependent(fma, monkeypatch):
    """Where programmatic dependent launch is taken (``launch.dependent_launch``, made to say yes
    here; off CUDA it never does), the forward on FMA units is launched by it (``PDL`` and Triton's
    ``launch_pdl`` option) after a projection that lets it start early (``DEPENDENTS``, which lets
    a kernel launched plainly start no earlier); a forward on tensor cores is launched plainly (its
    kernels have no wait)."""
    from rnnbench.ops import launch, projection

    assert not launch.dependent_launch(torch.device("cpu"))
    launched = []
    monkeypatch.setattr(KernelLauncher, "__call__", lambda self, grid, args, constexprs, stream=None, keyed=None:
                        launched.append((self.fn.__name__, constexprs.values)))
    monkeypatch.setattr(recurrence, "dependent_launch", lambda device: True)
    monkeypatch.setattr(projection, "dependent_launch", lambda device: True)
    x, w_ih, w_hh = torch.randn(2, 3, 5), torch.randn(8, 5), torch.randn(8, 8)
    with recurrence.plan_override(fma=fma):
        recurrence.recurrent_layer("rnn_tanh", x, None, None, w_ih, w_hh)
    (name, values), = [(n, v) for n, v in launched if "forward" in n]
    assert ("fma" in name) == fma
    assert (values.get("PDL"), values.get("launch_pdl")) == ((True, True) if fma else (None, None))
    (dependents, ), = [(v["DEPENDENTS"], ) for n, v in launched if n == "input_projection_kernel"]
    assert dependents


def test_constexprs_are_numbered_by_value():
    """The launch key holds a Constexprs' number: equal values (in any order) must share it and
    different values must not (a number shared by two plans would launch one plan's variant for
    the other's)."""
    from rnnbench.ops.launch import Constexprs

    first, same = Constexprs(dict(H=8, BLOCK_B=16, num_warps=4)), Constexprs(dict(num_warps=4, BLOCK_B=16, H=8))
    other = Constexprs(dict(H=8, BLOCK_B=32, num_warps=4))
    assert first.number == same.number
    assert other.number != first.number
    # ... and by the plan the caller allocates its buffers by, which the kernel is not passed
    planned, same_plan = (Constexprs(dict(H=8, BLOCK_B=16, num_warps=4), plan) for plan in ("a", "a"))
    assert planned.number == same_plan.number
    assert Constexprs(dict(H=8, BLOCK_B=16, num_warps=4), "b").number not in (planned.number, first.number)


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_the_forward_keys_every_tensor_its_caller_gives(cell, monkeypatch):
    """The forward's launch key reads only its leading ``keyed`` tensors: every tensor the caller
    passes (a weight or state that may sit off a 16-byte boundary, or in another dtype) must be
    among them, and none of them after (those must be buffers the call allocated)."""
    seen = {}

    def spy(self, grid, args, constexprs, stream=None, keyed=None):
        seen.update(args=args, keyed=keyed)

    monkeypatch.setattr(KernelLauncher, "__call__", spy)
    torch.manual_seed(0)
    t, b, h = 3, 2, 8
    gates = recurrence.NUM_GATES[cell]
    lstm = cell == "lstm"
    x_proj, w_hh = torch.randn(t, b, gates * h), torch.randn(gates * h, h)
    b_ih, b_hh, h0, c0 = torch.randn(gates * h), torch.randn(gates * h), torch.randn(b, h), torch.randn(b, h)
    launch = recurrence.layer_launch(cell, b, h, torch.float32, torch.device("cpu"))
    recurrence.recurrence_forward(cell, x_proj, w_hh, b_ih, b_hh, h0, c0 if lstm else None, launch, True)
    given = [x_proj, w_hh, b_ih, b_hh, h0] + ([c0] if lstm else [])
    keyed, rest = seen["args"][:seen["keyed"]], seen["args"][seen["keyed"]:]
    assert all(any(g is k for k in keyed) for g in given)
    assert not any(a is g for a in rest for g in given)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_a_launch_key_stands_for_one_specialisation(cell, monkeypatch):
    """A cached launch reuses the kernel compiled for its key, so one key must never stand for
    calls whose tensors (keyed or allocated) differ in dtype or alignment. Forwards and backwards
    in slices and whole, 16-bit and fp32, with the saved gates in 16 bits and in fp32
    (``Plan.half_saved``, which only the plan says: keyed without it, the fp32-gate variant ran
    on 16-bit gates, an illegal address on the H200)."""
    from rnnbench.ops.launch import _leading_tensors, _specialisation

    keys = {}

    def spy(self, grid, args, constexprs, stream=None, keyed=None):
        keys.setdefault((self.fn.__name__, self._key(args, constexprs, keyed)), set()).add(
            _specialisation(args[:_leading_tensors(args)]))

    monkeypatch.setattr(KernelLauncher, "__call__", spy)
    t, b, h = 3, 2, 32
    gates = recurrence.NUM_GATES[cell]
    sliced = dict(h_on_chip=False, w_resident=False, block_k=16, pieces=2)
    for dtype in (torch.bfloat16, torch.float32):
        for override in (sliced, dict(sliced, forward_half_saved=False), {}):
            if dtype == torch.float32 and override.get("forward_half_saved") is False:
                continue  # (fp32 weights save fp32 gates already; the plan refuses the override)
            x_proj, w_hh = torch.randn(t, b, gates * h, dtype=dtype), torch.randn(gates * h, h, dtype=dtype)
            with recurrence.plan_override(**override):
                launch = recurrence.layer_launch(cell, b, h, dtype, torch.device("cpu"))
                assert (launch.forward.pieces, launch.backward.pieces) == ((2, 2) if override else (1, 1))
                h_buf, _, _, saved, c_buf = recurrence.recurrence_forward(cell, x_proj, w_hh, None, None, None, None,
                                                                          launch, True)
                recurrence.recurrence_backward(cell, torch.randn(t, b, h, dtype=dtype), None, None, saved, c_buf,
                                               h_buf, w_hh, launch)
    spread = {key: found for key, found in keys.items() if len(found) > 1}
    assert len(keys) >= 6 and not spread


@pytest.mark.parametrize("produce", [False, True])
def test_the_rnns_fma_forward_keys_every_tensor_its_caller_gives(produce, monkeypatch):
    """As above, for the RNN's forward on FMA units, with its projection launched before it and
    computed in its own launch (``Plan.produce``: x and W_ih are the caller's too)."""
    seen = {}

    def spy(self, grid, args, constexprs, stream=None, keyed=None):
        seen.update(args=args, keyed=keyed)

    monkeypatch.setattr(KernelLauncher, "__call__", spy)
    torch.manual_seed(0)
    t, b, i, h = 3, 2, 5, 8
    x, w_ih, w_hh = torch.randn(t, b, i), torch.randn(h, i), torch.randn(h, h)
    x_proj, b_ih, b_hh, h0 = torch.randn(t, b, h), torch.randn(h), torch.randn(h), torch.randn(b, h)
    with recurrence.plan_override(fma=True, forward_produce=produce):
        launch = recurrence.layer_launch("rnn_tanh", b, h, torch.float32, torch.device("cpu"))
        produced = recurrence.produces(launch, x)
        assert (produced is not None) == produce
        recurrence.recurrence_forward("rnn_tanh", None if produce else x_proj, w_hh, b_ih, b_hh, h0, None, launch,
                                      True, x=x if produce else None, w_ih=w_ih if produce else None,
                                      produced=produced)
    given = [w_hh, b_ih, b_hh, h0] + ([x, w_ih] if produce else [x_proj])
    keyed, rest = seen["args"][:seen["keyed"]], seen["args"][seen["keyed"]:]
    assert all(any(g is k for k in keyed) for g in given)
    assert not any(a is g for a in rest for g in given)


@pytest.mark.parametrize("produce", [False, True])
def test_the_rnns_fma_forward_gets_every_constexpr_by_value(produce):
    """A cached launch passes a kernel's compile-time arguments by name from its Constexprs
    (``KernelLauncher``: none may be left to a default, or the first launch of the variant on the
    GPU fails): the RNN's FMA forward names every one, producing (``Plan.produce``) or not."""
    from rnnbench.ops.projection import produced_tiles
    from rnnbench.ops.rnn.fma import rnn_forward_fma_kernel

    params = inspect.signature(getattr(rnn_forward_fma_kernel, "fn", rnn_forward_fma_kernel)).parameters
    constexprs = {n for n, p in params.items() if p.annotation in ("tl.constexpr", tl.constexpr)}
    with recurrence.plan_override(fma=True, forward_produce=produce):
        launch = recurrence.layer_launch("rnn_tanh", 3, 37, torch.float32, torch.device("cpu"))
        values = launch.forward_constexprs(True, True, False, False, False, False,
                                           produced_tiles(21, 37, 5)[:2] if produce else None).values
    assert len(constexprs) > 10 and constexprs <= set(values)
    assert values["PRODUCE"] == produce


class _Param:
    def __init__(self, name, do_not_specialize):
        self.name, self.do_not_specialize = name, do_not_specialize


class CudaLauncher:  # named as Triton's, which _c_launcher asks for
    launch_cooperative_grid, launch_pdl = False, False

    def __init__(self, scratch=0):
        self.global_scratch_size, self.profile_scratch_size = scratch, 0
        self.calls = []

    def launch(self, *args):
        self.calls.append(args)


class _Compiled:
    """Stands in for a CompiledKernel: its runner (``kernel[grid](...)``) and its C launcher."""

    function, packed_metadata = 1234, (4, 1, 0)

    def __init__(self, scratch=0):
        self.run = CudaLauncher(scratch)
        self.runner_calls = []

    def __getitem__(self, grid):
        return lambda *args, stream=None: self.runner_calls.append((grid, args, stream))


class _Jit:
    """Stands in for a JIT function whose first launch compiles ``compiled``."""

    arg_names = ["x_ptr", "n", "BLOCK"]
    params = [_Param("x_ptr", False), _Param("n", True), _Param("BLOCK", False)]
    __name__ = "fake_kernel"

    def __init__(self, compiled):
        self.compiled, self.jit_calls = compiled, 0

    def __getitem__(self, grid):
        def launch(*args, **constexprs):
            self.jit_calls += 1
            return self.compiled
        return launch


def _launch_twice(compiled, monkeypatch, version="3.6.0"):
    from rnnbench.ops import launch

    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(launch.triton, "__version__", version)
    fn = _Jit(compiled)
    launcher, x = KernelLauncher(fn), torch.zeros(4)
    constexprs = launch.Constexprs(dict(BLOCK=16))
    for _ in range(2):
        launcher((2, 3), (x, 5), constexprs, stream=77)
    return fn, x


def test_the_second_launch_calls_tritons_c_launcher_directly(monkeypatch):
    """Under Triton 3.6 a cached launch skips the runner: the C launcher gets the grid, the stream,
    the arguments 3.6's runner gives it (no scratch, no launch metadata, no hooks), then the
    kernel's runtime arguments and its constexprs, in the kernel's order."""
    compiled = _Compiled()
    fn, x = _launch_twice(compiled, monkeypatch)
    assert fn.jit_calls == 1 and not compiled.runner_calls
    (call,) = compiled.run.calls
    assert call[:4] == (2, 3, 1, 77)
    assert call[4:13] == (1234, False, False, None, None, (4, 1, 0), None, None, None)
    assert call[13] is x and call[14:] == (5, 16)


def test_a_launch_made_is_recorded_and_its_direct_launcher_given(monkeypatch):
    """Within ``recording()`` every launch is noted (launcher, grid, arguments, constexprs, stream,
    keyed); ``direct`` then gives the C launcher, the arguments before the kernel's and the
    constexprs after them, which launch it as the cached launch does (ops/replay.py's replays);
    None for arguments never launched."""
    from rnnbench.ops import launch

    monkeypatch.setattr(launch, "INTERPRET", False)
    monkeypatch.setattr(launch.triton, "__version__", "3.6.0")
    compiled = _Compiled()
    launcher, x = KernelLauncher(_Jit(compiled)), torch.zeros(4)
    constexprs = launch.Constexprs(dict(BLOCK=16))
    with launch.recording() as records:
        launcher((2, 3), (x, 5), constexprs, stream=77)
    assert records == [(launcher, (2, 3), (x, 5), constexprs, 77, None)]
    c_launch, head, tail = launcher.direct((x, 5), constexprs)
    c_launch(2, 3, 1, 77, *head, x, 5, *tail)
    assert compiled.run.calls[-1][:4] == (2, 3, 1, 77) and compiled.run.calls[-1][13:] == (x, 5, 16)
    assert launcher.direct((torch.zeros(4, dtype=torch.float64), 5), constexprs) is None
    launcher((2, 3), (x, 5), constexprs, stream=77)  # outside a recording: nothing noted
    assert len(records) == 1


@pytest.mark.parametrize("case", ["another triton", "scratch memory", "a launch hook"])
def test_the_runner_launches_where_the_c_launcher_is_not_known_to_fit(case, monkeypatch):
    from triton import knobs

    compiled = _Compiled(scratch=256 if case == "scratch memory" else 0)
    if case == "a launch hook":  # a profiler's: it must see every launch, with its metadata
        monkeypatch.setattr(knobs.runtime, "launch_enter_hook", lambda metadata: None)
    fn, x = _launch_twice(compiled, monkeypatch, version="3.9.0" if case == "another triton" else "3.6.0")
    assert not compiled.run.calls
    ((grid, args, stream),) = compiled.runner_calls
    assert grid == (2, 3, 1) and args[0] is x and args[1:] == (5, 16) and stream == 77


def test_a_counter_pool_hands_out_zeroed_slices_and_zeroes_itself_when_used_up():
    """``CounterPool``: each slice handed out is zero, starts on a 16-byte boundary (the compiled
    kernels assume the first launch's alignment) and overlaps no slice handed out since the last
    zeroing, though every kernel leaves its slice counted (written here as a kernel would); a
    slice that no longer fits zeroes the whole pool first. A pool asked for more than it holds
    refuses."""
    import torch

    from rnnbench.ops.launch import CounterPool

    pool = CounterPool(10, torch.device("cpu"))
    taken, zeroings = [], 0
    for k, count in enumerate([3, 4, 2, 3, 3, 1, 10, 2, 2, 2]):
        got = pool.take(count)
        assert got.numel() == count and not got.any() and not got.data_ptr() & 15, k
        start = got.data_ptr() // 4 - pool.buffer.data_ptr() // 4
        if start == 0:
            taken, zeroings = [], zeroings + 1  # the pool was zeroed: earlier slices may be reused
        assert all(start >= end or start + count <= begin for begin, end in taken), k
        taken.append((start, start + count))
        got.fill_(k + 7)  # the kernel counts in it and leaves it so
    assert zeroings == 4  # slices at 0, 4, 8 | 0, 4, 8 | 0 | 0, 4, 8 (each start a multiple of 4)
    with pytest.raises(ValueError, match="pool of 10"):
        pool.take(11)


def test_counted_counters_are_fresh_zeros_off_cuda_and_under_a_graph_capture(monkeypatch):
    """``counted_counters``: off CUDA, and on CUDA while a graph is being captured (a pool's slice
    would be captured once and replayed counted), a tensor of its own, zeroed; eagerly on CUDA a
    slice of the stream's pool (the CUDA side is run by the Gluon tests on a GPU)."""
    import torch

    from rnnbench.ops import launch

    got = launch.counted_counters(3, torch.device("cpu"))
    assert got.dtype == torch.int32 and got.numel() == 3 and not got.any() and got._base is None
    made = []
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    monkeypatch.setattr(torch, "zeros", lambda *a, **k: made.append((a, k)) or "fresh")
    assert launch.counted_counters(2, torch.device("cuda")) == "fresh" and made[0][0] == (2, )
    assert not launch.POOLS


# The plan that runs each kernel of aot.KERNELS under the interpreter (CPU), by its variant.
# (one program a batch block: block_h 64 holds hidden 37's units)
_VARIANT_PLAN = {None: {}, "pieces": {"h_on_chip": False, "w_resident": False, "block_h": 64, "pieces": 2},
                 "split_k": {"h_on_chip": False, "block_h": 64, "split_k": True}, "fma": {"fma": True}}


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("key", list(aot.KERNELS), ids=lambda k: "-".join(k))
def test_every_kernel_gets_every_constexpr_by_value(key, drop):
    """Each ``tl`` kernel's Constexprs as ``_Launch`` builds them for the plan that runs it name every
    compile-time argument the kernel takes, defaulted ones too (``DROP``, recurrent dropout, and
    ``LN``, layer norm, among them: the GPU's first launch of the LSTM's kernels failed on DROP,
    call167), and none it does not; with ``drop``, DROP and LN set, as where a recurrent-dropout
    plan or a layer-norm plan runs the kernel (the LSTM's backward takes LN too)."""
    cell, direction, variant = (*key, None)[:3]
    cell = "rnn_tanh" if cell == "rnn" else cell
    kernel = aot.KERNELS[key]
    params = inspect.signature(getattr(kernel, "fn", kernel)).parameters
    constexprs = {n for n, p in params.items() if p.annotation in ("tl.constexpr", tl.constexpr)}
    fields = {f"{direction}_{k}" if k != "split_k" else k: v for k, v in _VARIANT_PLAN[variant].items()}
    with recurrence.plan_override(**fields):
        launch = recurrence.layer_launch(cell, 3, 37, torch.float32, torch.device("cpu"))
        plan = getattr(launch, direction)
        assert (plan.pieces > 1, plan.split_k, plan.fma) == (variant == "pieces", variant == "split_k",
                                                             variant == "fma")
        if direction == "forward":
            values = launch.forward_constexprs(True, True, True, True, False, False, None, drop, drop).values
        else:
            values = launch.backward_constexprs(True, True, True, False, drop, drop).values
    names = {n for n in values if n.isupper()}  # (num_warps and the like are launch options)
    assert constexprs == names
    if "DROP" in constexprs:
        assert values["DROP"] == drop
    if "LN" in constexprs:
        assert values["LN"] == drop
