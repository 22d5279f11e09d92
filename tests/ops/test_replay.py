"""``ops/replay.py`` on the CPU: a recording's launches replayed with another call's tensors, each
argument from where it came (the caller's tensors, the call's own allocations made afresh, numbers),
and the recordings that must not be replayed. The launchers here are stand-ins whose direct launch
computes on the CPU; the real ones (CUDA, Triton's C launcher) are the CUDA tests'."""

from __future__ import annotations

import pytest
import torch

from torch.utils._python_dispatch import _disable_current_modes

from rnnbench.ops.launch import note_launch
from rnnbench.ops.replay import Recording, Replay, _storage, recording


class _Launcher:
    """A launcher whose direct launch runs ``body(*args)`` (None: no direct launch), its tensor
    operations unseen by the recording's check for work outside launchers, as a real launch's
    (no tensor operation at all) are."""

    def __init__(self, body):
        self.body = body

    def __call__(self, grid, args, constexprs, stream=None, keyed=None):
        note_launch(self, (1,), args, constexprs, stream, keyed)
        if self.body is not None:
            self.run(*args)

    def run(self, *args):
        with _disable_current_modes():
            self.body(*args)

    def direct(self, args, constexprs, keyed=None):
        if self.body is None:
            return None
        return (lambda gx, gy, gz, stream, *args: self.run(*args)), (), ()


def _scale(x, w, out, n):  # out = x * w[0] * n
    out.copy_(x * w[0] * n)


def _accumulate(proj, h0, h_buf, h_n, steps):  # h_buf[t + 1] = h_buf[t] + proj[t]; h_n = h_buf[-1]
    h_buf[0].copy_(h0)
    for t in range(steps):
        h_buf[t + 1].copy_(h_buf[t] + proj[t])
    h_n.copy_(h_buf[steps])


def _call(x, w, h0):
    """A two-launch 'forward' as the recurrences make theirs: allocations, launches, a view out."""
    proj = torch.empty_like(x)
    SCALE(None, (x, w, proj, 2), None)
    h_buf = torch.empty(x.shape[0] + 1, *x.shape[1:])
    h_n = torch.empty(x.shape[1:])
    ACCUMULATE(None, (proj, h0, h_buf, h_n, x.shape[0]), None)
    return h_buf[1:], h_n


SCALE, ACCUMULATE = _Launcher(_scale), _Launcher(_accumulate)


def _recorded(x, w, h0):
    with recording() as records:
        out = _call(x, w, h0)
    return records, out


def test_a_replay_computes_what_the_call_computes_on_new_tensors():
    """Replayed with other inputs: the same results as the call itself on them, in fresh tensors
    (the first call's outputs untouched), laid on their memory as the call laid them."""
    x, w, h0 = torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)
    records, first = _recorded(x, w, h0)
    kept = [t.clone() for t in first]
    replay = Replay.build(records, (x, w, h0), first)
    assert replay is not None and len(replay.allocations) == 3
    x2, w2, h2 = torch.randn(5, 3), torch.tensor([-1.5]), torch.randn(3)
    got = replay((x2, w2, h2))
    want = _call(x2, w2, h2)
    for g, e in zip(got, want):
        assert torch.equal(g, e) and g.shape == e.shape and g.stride() == e.stride()
    # h_buf[1:] of a fresh h_buf
    assert got[0].storage_offset() == 3 and got[0].untyped_storage().nbytes() == 6 * 3 * 4
    for f, k in zip(first, kept):
        assert torch.equal(f, k), "a replay wrote the recorded call's tensors"
    again = replay((x2, w2, h2))
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(again, got)), "outputs must be fresh each call"


def test_no_replay_of_what_a_launcher_did_not_do():
    """Work outside a launcher (``note_unrecorded``), a launch without a direct launcher, a tensor
    neither the caller's nor a whole allocation of the call (a slice of a persistent buffer), an
    output not made of the call's allocations: no replay."""
    from rnnbench.ops.launch import note_unrecorded

    x, w, h0 = torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)
    with recording() as records:
        out = _call(x, w, h0)
        note_unrecorded()
    assert Replay.build(records, (x, w, h0), out) is None
    assert Replay.build(Recording([]), (x, w, h0), out) is None
    with recording() as records:
        _Launcher(None)(None, (x, w, torch.empty_like(x), 2), None)
    assert Replay.build(records, (x, w, h0), ()) is None
    persistent = torch.zeros(100)
    with recording() as records:
        SCALE(None, (x, w, persistent[:15].view(5, 3), 2), None)
    assert Replay.build(records, (x, w, h0), ()) is None
    records, out = _recorded(x, w, h0)
    assert Replay.build(records, (x, w, h0), (torch.zeros(3),)) is None
    assert Replay.build(records, (x, w, h0), out) is not None


@pytest.mark.parametrize("absent", [True, False])
def test_a_replay_puts_each_input_where_it_went(absent):
    """An input given as None in the recording stays None; an input passed in two places (the
    kernels' placeholders: w standing in for absent biases) is the new input in both."""
    seen = []
    twice = _Launcher(lambda a, b, out: (seen.append((a, b)), out.copy_(a + b)))
    x = torch.randn(4)
    with recording() as records:
        out = torch.empty(4)
        twice(None, (x, x, out), None)
    replay = Replay.build(records, (x, None) if absent else (x, torch.ones(1)), (out,))
    x2 = torch.randn(4)
    (got,) = replay((x2, None) if absent else (x2, torch.ones(1)))
    assert seen[-1][0] is x2 and seen[-1][1] is x2 and torch.equal(got, 2 * x2)


def _replayed_twice(monkeypatch=None):
    """A replay of ``_call`` and two calls of it with new inputs (the first makes the scratch)."""
    x, w, h0 = torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)
    records, first = _recorded(x, w, h0)
    replay = Replay.build(records, (x, w, h0), first)
    return replay, replay((torch.randn(5, 3), w, h0)), replay((torch.randn(5, 3), w, h0))


def _scratch_pointer(replay) -> int:
    (scratch,) = replay._kept[1]
    return scratch.data_ptr()


def test_a_replay_keeps_its_scratch_for_the_same_thread_and_stream():
    """The projection (no output is made of it) is allocated once and reused by the next call on
    the same thread and stream; the outputs are fresh every call; another thread gets scratch of
    its own, right results all the same."""
    import threading

    replay, a, b = _replayed_twice()
    kept = _scratch_pointer(replay)
    x2, w2, h2 = torch.randn(5, 3), torch.tensor([2.0]), torch.randn(3)
    got = replay((x2, w2, h2))
    assert _scratch_pointer(replay) == kept, "the scratch was allocated again on the same thread"
    assert all(g.data_ptr() not in (p.data_ptr(), q.data_ptr()) for g, p, q in zip(got, a, b))
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append((replay((x2, w2, h2)), _scratch_pointer(replay))))
    thread.start()
    thread.join()
    (other, pointer), = elsewhere
    assert pointer != kept, "another thread was given this thread's scratch"
    for g, o, e in zip(got, other, _call(x2, w2, h2)):
        assert torch.equal(g, e) and torch.equal(o, e)


def test_a_replay_allocates_scratch_past_its_limit_every_call(monkeypatch):
    """Scratch larger than ``SCRATCH_KEPT_BYTES`` is not kept: a new one each call."""
    from rnnbench.ops import replay as module

    monkeypatch.setattr(module, "SCRATCH_KEPT_BYTES", 5 * 3 * 4 - 1)  # the projection's 60 bytes, less one
    replay, _, _ = _replayed_twice()
    assert replay.scratch == () and replay._kept[1] == ()
    monkeypatch.setattr(module, "SCRATCH_KEPT_BYTES", 5 * 3 * 4)
    replay, _, _ = _replayed_twice()
    assert len(replay._kept[1]) == 1


def _count_allocations(monkeypatch, events: list) -> None:
    """Note an ``empty`` in ``events`` for every ``torch.empty`` and ``torch.empty_strided``."""
    for name in ("empty", "empty_strided"):
        made = getattr(torch, name)
        monkeypatch.setattr(torch, name, lambda *a, made=made, **k: events.append("empty") or made(*a, **k))


def test_a_replay_launches_before_it_allocates_what_later_launches_take(monkeypatch):
    """Each allocation is made just before the first launch that takes it: with the scratch kept,
    the first launch leaves before any torch.empty of the call (no reuse of earlier outputs here:
    the first call's, let go of, would be taken instead)."""
    from rnnbench.ops import replay as module

    monkeypatch.setattr(module, "REUSE", False)
    replay, _, _ = _replayed_twice()
    events = []
    scale = SCALE.body
    _count_allocations(monkeypatch, events)
    monkeypatch.setattr(SCALE, "body", lambda *a: events.append("launch") or scale(*a))
    replay((torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)))
    assert events == ["launch", "empty", "empty"]


def _events_of_a_third_call(monkeypatch) -> list[str]:
    """The allocations and launches of a replay's third call, in order."""
    replay, _, _ = _replayed_twice()
    events = []
    scale, accumulate = SCALE.body, ACCUMULATE.body
    _count_allocations(monkeypatch, events)
    monkeypatch.setattr(SCALE, "body", lambda *a: events.append("launch") or scale(*a))
    monkeypatch.setattr(ACCUMULATE, "body", lambda *a: events.append("launch") or accumulate(*a))
    replay((torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)))
    return events


def test_a_replay_makes_the_next_calls_outputs_after_its_launches(monkeypatch):
    """With ``ALLOCATE_AHEAD`` a warm call launches both kernels back to back and then makes the next
    call's two outputs; without it, the outputs are made between the launches (no reuse of earlier
    outputs in either)."""
    from rnnbench.ops import replay as module

    monkeypatch.setattr(module, "REUSE", False)
    assert _events_of_a_third_call(monkeypatch) == ["launch", "launch", "empty", "empty"]
    monkeypatch.undo()
    monkeypatch.setattr(module, "REUSE", False)
    monkeypatch.setattr(module, "ALLOCATE_AHEAD", False)
    assert _events_of_a_third_call(monkeypatch) == ["launch", "empty", "empty", "launch"]


def test_outputs_made_ahead_are_each_calls_own(monkeypatch):
    """Outputs made ahead are taken by one call of the thread and stream they were made for: every
    call's outputs are its own storage, however the calls come (another thread between, the
    switch turned off between), and right."""
    import threading

    from rnnbench.ops import replay as module

    replay, a, b = _replayed_twice()
    seen = [a, b]
    made = [a[0].data_ptr() for a in replay._kept[2]]  # (the replay's own tensors)
    assert len(made) == 2 and {t.untyped_storage().data_ptr() for t in b}.isdisjoint(made)
    inputs = torch.randn(5, 3), torch.tensor([2.0]), torch.randn(3)
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(replay(inputs)))
    thread.start()
    thread.join()
    seen.append(elsewhere[0])
    assert {t.untyped_storage().data_ptr() for t in elsewhere[0]}.isdisjoint(made), "another thread took them"
    seen.append(replay(inputs))
    monkeypatch.setattr(module, "ALLOCATE_AHEAD", False)
    seen += [replay(inputs), replay(inputs)]
    storages = [t.untyped_storage().data_ptr() for outputs in seen for t in outputs]
    assert len(set(storages)) == len(storages), "two calls' outputs share storage"
    for outputs in seen[2:]:
        for g, e in zip(outputs, _call(*inputs)):
            assert torch.equal(g, e)


# Ways a caller holds a call's outputs (``_call``'s ``(h_buf[1:], h_n)``): what each keeps, and
# which outputs' memory it keeps.
def _hold_the_object(outputs):  # h_n, returned as the replay's own tensor
    return outputs[1], (1,)


def _hold_a_view(outputs):  # a slice of h_buf[1:], itself a view of the allocation
    return outputs[0][2:], (0,)


def _hold_an_alias(outputs):  # another tensor on each output's memory, the outputs let go of
    return [torch.empty(0).set_(t.untyped_storage(), t.storage_offset(), t.shape, t.stride()) for t in outputs], (0, 1)


def _hold_through_autograd(outputs):  # saved by autograd for a backward (C++ holds the tensor)
    w = torch.ones(3, requires_grad=True)
    return w * outputs[1], (1,)


@pytest.mark.parametrize("hold", [None, _hold_the_object, _hold_a_view, _hold_an_alias, _hold_through_autograd])
def test_a_replay_reuses_an_earlier_calls_outputs_only_once_let_go(hold):
    """With ``REUSE`` the outputs made ahead are an earlier call's where nothing but the replay
    refers to them or to their memory: a call's outputs let go of come back two calls later; held in
    any way (the tensor, a view, another tensor on the memory, autograd's saved tensors), never, and
    what is held keeps its values. Every call's results right."""
    replay, _, _ = _replayed_twice()
    inputs = [(torch.randn(5, 3), torch.tensor([float(n + 1)]), torch.randn(3)) for n in range(3)]
    first = replay(inputs[0])
    where = [_storage(t) for t in first]
    values = [t.clone() for t in first]
    held, kept = hold(first) if hold else (None, ())
    del first
    second = replay(inputs[1])
    third = replay(inputs[2])
    got = [_storage(t) for t in third]
    for k in range(2):
        if k in kept:
            assert got[k] not in where and got[k] != _storage(second[k]), "a held output was written again"
        else:
            assert got[k] == where[k], "let go of, the first call's output was not reused"
    if hold is _hold_the_object:
        assert torch.equal(held, values[1])
    elif hold is _hold_a_view:
        assert torch.equal(held, values[0][2:])
    elif hold is _hold_an_alias:
        assert all(torch.equal(a, v) for a, v in zip(held, values))
    elif hold is _hold_through_autograd:
        assert torch.equal(held, values[1])  # (w is ones)
    for outputs, inp in zip((second, third), inputs[1:]):
        for g, e in zip(outputs, _call(*inp)):
            assert torch.equal(g, e)


def test_what_a_caller_did_to_an_output_it_let_go_of_never_reaches_a_later_call():
    """A replay hands every call tensors of its own, whatever the caller did to an earlier call's
    before letting go of them (its shape changed in place, gradients asked of it, an attribute
    set): a later call on the same memory returns outputs as the call itself would."""
    replay, _, _ = _replayed_twice()
    inputs = [(torch.randn(5, 3), torch.tensor([float(n + 1)]), torch.randn(3)) for n in range(3)]
    first = replay(inputs[0])
    where = [_storage(t) for t in first]
    first[0].squeeze_(1).unsqueeze_(0)  # [1, 5, 3]
    first[1].unsqueeze_(0).requires_grad_()
    first[1].grad = torch.ones(1, 3)
    first[1].note = "the caller's"
    del first
    replay(inputs[1])
    third = replay(inputs[2])
    assert [_storage(t) for t in third] == where, "let go of, the first call's memory was not reused"
    for got, want in zip(third, _call(*inputs[2])):
        assert got.shape == want.shape and got.stride() == want.stride() and torch.equal(got, want)
        assert not got.requires_grad and got.grad is None and not hasattr(got, "note")


def test_a_replay_keeps_nothing_it_handed_out():
    """An output an autograd Function returns whole takes that call's autograd history; were the
    replay to keep the tensor it handed out (for reuse once let go of), it would keep the call's
    graph, and the leaves the graph reaches, alive. Every call's graph goes with its outputs, and
    the memory still comes back."""
    import weakref

    x, w, h0 = torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)
    records, first = _recorded(x, w, h0)
    replay = Replay.build(records, (x, w, h0), first)

    class Layer(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, h0):
            return replay((x, w, h0))  # (h_buf[1:], h_n)

        @staticmethod
        def backward(ctx, d_out, d_h_n):
            return d_out.sum(0), None, None

    graphs, where = [], []
    for _ in range(4):
        leaf = torch.randn(5, 3, requires_grad=True)
        out, h_n = Layer.apply(leaf, w, h0)
        assert torch.equal(h_n, _call(leaf.detach(), w, h0)[1])
        graphs.append(weakref.ref(h_n.grad_fn))
        where.append(_storage(h_n))
        del out, h_n, leaf
    assert not any(g() is not None for g in graphs)
    assert where[2] == where[0] and where[3] == where[1], "let go of, the outputs' memory was not reused"


def test_a_replay_makes_nothing_ahead_past_the_limit(monkeypatch):
    """An output larger than ``SCRATCH_KEPT_BYTES`` is made by its call, not ahead."""
    from rnnbench.ops import replay as module

    monkeypatch.setattr(module, "SCRATCH_KEPT_BYTES", 6 * 3 * 4 - 1)  # h_buf's 72 bytes, less one
    replay, _, _ = _replayed_twice()
    assert [shape for shape, *_ in replay.ahead] == [(3,)] and len(replay._kept[2]) == 1


def test_a_replay_takes_views_of_inputs_and_allocations():
    """A launch given a view of an input (``x.view(-1)``) or of an allocation (a slice): the same
    view of the new call's tensors."""
    double = _Launcher(lambda flat, rows: rows.copy_(flat.view(rows.shape) * 2))

    def call(x):
        buf = torch.empty(x.shape[0] + 1, x.shape[1])
        double(None, (x.view(-1), buf[1:]), None)
        return buf[1:]

    x = torch.randn(4, 3)
    with recording() as records:
        out = call(x)
    replay = Replay.build(records, (x,), (out,))
    assert replay is not None
    x2 = torch.randn(4, 3)
    (got,) = replay((x2,))
    assert torch.equal(got, x2 * 2) and torch.equal(got, call(x2))
    assert got.storage_offset() == 3


def test_a_replay_takes_views_of_an_input_that_is_itself_a_view():
    """An input that is a view (a stacked layer's input: the layer below's output, a view into
    its hidden states), and a launch given a view of it (``x.reshape(-1)``, whose base is the
    input's base, not the input): the same view of the new call's input, wherever that lies; a
    view reaching past every input's memory gives no replay."""
    double = _Launcher(lambda flat, out: out.copy_(flat.view(out.shape) * 2))

    def call(x, launched=lambda x: x.reshape(-1)):
        out = torch.empty_like(x)
        double(None, (launched(x), out), None)
        return out

    below = torch.randn(5, 4, 3)
    x = below[1:]  # (a view one plane in)
    with recording() as records:
        out = call(x)
    replay = Replay.build(records, (x,), (out,))
    assert replay is not None
    x2 = torch.randn(7, 4, 3)[2:6]
    (got,) = replay((x2,))
    assert torch.equal(got, x2 * 2)
    with recording() as records:  # (the launch reads a plane before the input's first)
        out = call(x, lambda x: x._base[:4].reshape(-1))
    assert Replay.build(records, (x,), (out,)) is None

def test_barrier_counters_are_kept_and_bind_a_replay_to_their_stream(monkeypatch):
    """A stream's barrier counters (launch.COUNTERS) may be a launch's argument: the replay passes
    the buffer recorded, and runs only on the stream recorded (elsewhere it returns None)."""
    from rnnbench.ops import launch

    counters = torch.zeros(8, dtype=torch.int32)
    monkeypatch.setitem(launch.COUNTERS, ("cpu", None), counters)
    seen = []
    count = _Launcher(lambda x, c, out: (seen.append(c), out.copy_(x + 1)))
    x = torch.randn(3)
    for stream, runs in ((None, True), (7, False)):
        with recording() as records:
            out = torch.empty(3)
            count(None, (x, counters, out), None, stream)
        replay = Replay.build(records, (x,), (out,))
        got = replay((torch.ones(3),))
        assert (got is not None) == runs
        if runs:
            assert seen[-1] is counters and torch.equal(got[0], torch.full((3,), 2.0))
    other = torch.zeros(8, dtype=torch.int32)  # a tensor of nobody's: no replay
    with recording() as records:
        out = torch.empty(3)
        count(None, (x, other, out), None)
    assert Replay.build(records, (x,), (out,)) is None


def test_a_counter_pools_slice_is_taken_afresh_each_call(monkeypatch):
    """A slice of a counter pool (launch.counted_counters', which the Gluon forwards leave counted)
    may be a launch's argument: each replayed call passes a fresh zeroed slice of the current
    stream's pool, as the normal path takes one, never the recorded slice, which the recorded call
    left counted; one slice passed twice is one slice both times."""
    from rnnbench.ops import launch

    pool = launch.CounterPool(16, torch.device("cpu"))
    monkeypatch.setitem(launch.POOLS, ("cpu", None), pool)
    seen = []

    def count(x, arrivals, again, out):  # counts in its slice, as the Gluon forwards do
        seen.append((arrivals.clone(), arrivals is again, arrivals))
        arrivals += 1
        out.copy_(x + arrivals.sum())

    counting = _Launcher(count)
    x = torch.randn(3)
    with recording() as records:
        out = torch.empty(3)
        piece = pool.take(2)
        counting(None, (x, piece, piece, out), None)
    replay = Replay.build(records, (x,), (out,))
    assert replay is not None
    assert torch.equal(piece, torch.ones(2, dtype=torch.int32))  # left counted by the recorded call
    for _ in range(3):
        got = replay((torch.zeros(3),))
        counts, same, passed = seen[-1]
        assert same and passed is not piece and passed.numel() == 2
        assert torch.equal(counts, torch.zeros(2, dtype=torch.int32)), "a slice already counted in"
        assert torch.equal(got[0], torch.full((3,), 2.0))


def test_an_absent_output_stays_absent():
    x, w, h0 = torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3)
    records, (out, h_n) = _recorded(x, w, h0)
    replay = Replay.build(records, (x, w, h0), (out, None, h_n))
    got = replay((x, w, h0))
    assert got[1] is None and torch.equal(got[0], out) and torch.equal(got[2], h_n)


def test_a_guarded_recording_refuses_any_work_but_launches_allocations_and_views():
    """``replay.recording``: a tensor operation between the launches that computes (an in-place
    add, a matmul) leaves no replay; allocations and views do not."""
    from rnnbench.ops import replay as module

    double = _Launcher(lambda a, out: out.copy_(a * 2))
    x = torch.randn(4, 3)
    for extra, replayable in ((lambda t: t.view(-1), True), (lambda t: torch.empty_like(t), True),
                              (lambda t: t.add_(1), False), (lambda t: t @ t.t(), False)):
        with module.recording() as records:
            out = torch.empty(4, 3)
            extra(out)
            double(None, (x, out), None)
        assert (Replay.build(records, (x,), (out,)) is not None) == replayable


def test_only_contiguous_tensors_on_16_byte_boundaries_are_aligned():
    """``aligned``: what a replay's callers check of every tensor a recording's kernels take
    (None, an absent state or gradient, is skipped)."""
    from rnnbench.ops.replay import aligned

    base = torch.zeros(64)  # (torch's allocations start on 64-byte boundaries)
    assert aligned([base, None, base[4:]])  # 16 bytes in
    assert not aligned([base, base[1:]])  # 4 bytes in
    assert not aligned([base.view(8, 8).t(), None])  # strided
    assert aligned([])


def test_a_replays_allocations_are_laid_out_as_the_calls_were(monkeypatch):
    """A replay allocates by ``torch.empty_strided`` with the strides it recorded of each
    allocation, a contiguous tensor's, so its outputs and scratch have the recorded call's layout
    (on CUDA the kernels take bare addresses and assume it)."""
    from rnnbench.ops import replay as module

    for ahead in (True, False):
        monkeypatch.setattr(module, "ALLOCATE_AHEAD", ahead)
        replay, _, got = _replayed_twice()
        for shape, stride, dtype, _ in replay.allocations:
            assert stride == torch.empty(shape, dtype=dtype).stride(), shape
        expected = _call(torch.randn(5, 3), torch.tensor([0.5]), torch.randn(3))
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.stride() == e.stride() and g.storage_offset() == e.storage_offset()
        assert all(t.is_contiguous() for t in (*replay._kept[1], *(a[0] for a in replay._kept[2])))
