"""rnnbench.nn: drop-in LSTM / GRU / RNN.

On the kernels (Triton's interpreter on CPU tensors, one program per batch block): output, final
states and every gradient (input, initial states, every parameter) against the readable float64
network (``rnnbench.ops.naive`` -> rnnbench.reference) over odd sizes, with and without initial
states, 2 layers, bidirectional, batch_first, no bias, unbatched input; packed variable-length
batches against torch.nn in float64. Everywhere: the state_dict round trip with torch.nn, the
PyTorch path, the visible fallback, the errors.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings

import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

from rnnbench import nn as rnn
from rnnbench.ops.naive import naive_network
from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

MODULES = {"lstm": (rnn.LSTM, torch.nn.LSTM, {}), "gru": (rnn.GRU, torch.nn.GRU, {}),
           "rnn_tanh": (rnn.RNN, torch.nn.RNN, {"nonlinearity": "tanh"}),
           "rnn_relu": (rnn.RNN, torch.nn.RNN, {"nonlinearity": "relu"})}
CELLS = list(MODULES)
FP32 = tolerance("lstm", "fp32")


def _interpreted() -> bool:
    common = sys.modules.get("rnnbench.ops.common")
    return common is not None and common.INTERPRET


needs_interpreter = pytest.mark.skipif(
    not _interpreted(), reason="Triton is not installed" if importlib.util.find_spec("triton") is None else
    "the kernels were compiled for the GPU in this process; run with TRITON_INTERPRET=1 in a process of their own")


@pytest.fixture(autouse=True)
def _interpret_during_test(monkeypatch):
    """Triton reads TRITON_INTERPRET at launch time too, not only when a kernel is defined."""
    if _interpreted():
        monkeypatch.setenv("TRITON_INTERPRET", "1")


def make(cell, input_size, hidden_size, seed=0, **kwargs):
    ours, _, extra = MODULES[cell]
    torch.manual_seed(seed)
    return ours(input_size, hidden_size, **extra, **kwargs)


def _states(cell, module, batch, seed, unbatched=False):
    gen = torch.Generator().manual_seed(seed)
    d = 2 if module.bidirectional else 1
    shape = (module.num_layers * d, module.hidden_size) if unbatched else (module.num_layers * d, batch, module.hidden_size)
    h = torch.randn(shape, generator=gen) * 0.5
    return (h, torch.randn(shape, generator=gen) * 0.5) if cell == "lstm" else h


def _flat(cell, output, finals):
    return [output, *finals] if cell == "lstm" else [output, finals]


def _random_loss_grads(outs, leaves):
    """Gradients with respect to ``leaves`` of a seeded random linear loss of every tensor in
    ``outs`` (the same weights for both sides of a comparison), in float64."""
    g = torch.Generator().manual_seed(9)
    loss = sum((o.double() * torch.randn(o.shape, generator=g, dtype=torch.float64)).sum() for o in outs)
    return list(torch.autograd.grad(loss, leaves))


def _assert_all_close(names, got, ref, tol, dtype=None):
    """Every ``got`` tensor of the shape of its ``ref`` (and of ``dtype`` when given), within ``tol``
    relative error; ``names`` label them."""
    assert len(names) == len(got) == len(ref)
    for name, a, b in zip(names, got, ref):
        assert a.shape == b.shape and (dtype is None or a.dtype == dtype), name
        err = relative_error(a, b)
        assert err <= tol, f"{name}: relative error {err:.3g} > {tol:g}"


def check_module(cell, batch, seq, input_size, hidden_size, with_state=True, dtype="fp32", unbatched=False, **kwargs):
    """The module on the kernels against naive_network in float64, same weights and inputs."""
    module = make(cell, input_size, hidden_size, backend="triton", **kwargs).to(torch.float32)
    gen = torch.Generator().manual_seed(7)
    x_shape = [seq, batch, input_size]
    if kwargs.get("batch_first"):
        x_shape[:2] = [batch, seq]
    if unbatched:
        x_shape = [seq, input_size]
    x = torch.randn(x_shape, generator=gen)
    hx = _states(cell, module, batch, 8, unbatched) if with_state else None
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    module = module.to(torch_dtype)

    def run(fn, x, hx, params, wide):
        cast = (lambda t: t.detach().double().requires_grad_()) if wide else (lambda t: t.detach().to(torch_dtype).requires_grad_())
        x = cast(x)
        hx = None if hx is None else (tuple(cast(h) for h in hx) if cell == "lstm" else cast(hx))
        out, finals = fn(x, hx, params)
        outs = _flat(cell, out, finals)
        leaves = [x, *((hx if cell == "lstm" else [hx]) if hx is not None else []), *params.values()]
        return outs, _random_loss_grads(outs, leaves)

    params = {n: p for n, p in module.named_parameters()}
    got_out, got_grads = run(lambda x, hx, p: module(x, hx), x, hx, params, wide=False)
    wide = {n: p.detach().double().requires_grad_() for n, p in params.items()}
    x_ref = x.to(torch_dtype)  # the reference sees the inputs the module sees
    hx_ref = None if hx is None else (tuple(h.to(torch_dtype) for h in hx) if cell == "lstm" else hx.to(torch_dtype))
    ref_out, ref_grads = run(
        lambda x, hx, p: _naive(cell, module, p, x, hx, unbatched), x_ref, hx_ref, wide, wide=True)
    names = ["output", "h_n", "c_n"][: len(ref_out)] + ["grad_x"]
    names += (["grad_h0", "grad_c0"][: 2 if cell == "lstm" else 1] if hx is not None else []) + [f"grad_{n}" for n in params]
    _assert_all_close(names, [*got_out, *got_grads], [*ref_out, *ref_grads], tolerance(cell, dtype))


def _naive(cell, module, params, x, hx, unbatched):
    if unbatched:
        x = x.unsqueeze(1)
        hx = None if hx is None else (tuple(h.unsqueeze(1) for h in hx) if cell == "lstm" else hx.unsqueeze(1))
    out, finals = naive_network(cell, params, x, hx, module.num_layers, module.bidirectional, module.batch_first)
    if unbatched:
        out = out.squeeze(1)
        finals = tuple(f.squeeze(1) for f in finals) if cell == "lstm" else finals.squeeze(1)
    return out, finals


# (batch, seq, input, hidden, layers, options)
CONFIGS = {
    "B3-T7-I5-H37-L2": (3, 7, 5, 37, dict(num_layers=2)),
    "B1-T1-I3-H100-L1": (1, 1, 3, 100, {}),
    "B3-T7-I5-H37-L2-bidirectional": (3, 7, 5, 37, dict(num_layers=2, bidirectional=True)),
    "B3-T7-I5-H37-L1-batch_first": (3, 7, 5, 37, dict(batch_first=True)),
    "B3-T7-I5-H37-L1-no_bias": (3, 7, 5, 37, dict(bias=False)),
}


@needs_interpreter
@pytest.mark.parametrize("with_state", [True, False], ids=["hx", "no_hx"])
@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("cell", CELLS)
def test_module_on_kernels_matches_reference(cell, config, with_state):
    b, t, i, h, kwargs = CONFIGS[config]
    check_module(cell, b, t, i, h, with_state=with_state, **kwargs)


@needs_interpreter
@pytest.mark.parametrize("cell", CELLS)
def test_unbatched_input(cell):
    check_module(cell, 1, 5, 4, 37, unbatched=True, num_layers=2, bidirectional=True)


@needs_interpreter
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("cell", CELLS)
def test_module_half_precision(cell, dtype):
    check_module(cell, 3, 7, 5, 37, dtype=dtype, num_layers=2)


@pytest.mark.parametrize("cell", CELLS)
def test_state_dict_round_trip_with_torch_nn(cell):
    ours_cls, theirs_cls, extra = MODULES[cell]
    kwargs = dict(num_layers=2, bidirectional=True, bias=True)
    torch.manual_seed(0)
    theirs = theirs_cls(5, 37, **extra, **kwargs)
    ours = ours_cls(5, 37, **extra, **kwargs, backend="torch")
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [(n, p.shape) for n, p in theirs.named_parameters()]
    ours.load_state_dict(theirs.state_dict(), strict=True)
    back = theirs_cls(5, 37, **extra, **kwargs)
    back.load_state_dict(ours.state_dict(), strict=True)
    for (n, a), (_, b) in zip(theirs.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), n
    x = torch.randn(7, 3, 5)
    expected, got = theirs(x), ours(x)  # the torch backend is torch.nn itself
    assert torch.equal(expected[0], got[0])
    assert isinstance(ours, theirs_cls)


@needs_interpreter
@pytest.mark.parametrize("cell", CELLS)
def test_kernels_agree_with_torch_nn_on_its_weights(cell):
    ours_cls, theirs_cls, extra = MODULES[cell]
    torch.manual_seed(1)
    theirs = theirs_cls(5, 37, num_layers=2, **extra)
    ours = ours_cls(5, 37, num_layers=2, **extra, backend="triton")
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(7, 3, 5)
    (a, fa), (b, fb) = theirs(x), ours(x)
    assert relative_error(b, a) < FP32
    for u, v in zip(fa if cell == "lstm" else [fa], fb if cell == "lstm" else [fb]):
        assert relative_error(v, u) < FP32


@needs_interpreter
@pytest.mark.parametrize("with_state", [True, False], ids=["hx", "no_hx"])
@pytest.mark.parametrize("cell", CELLS)
def test_a_recorded_forward_returns_what_the_module_returns(cell, with_state):
    """The recording of an eager forward (``_recorded_forward``, the first call of a shape that
    ``ops/replay.py`` may replay on CUDA) returns the normal path's results; under the interpreter
    no replay is built (no direct launch to replay): the key keeps a refused recording, and the
    next call is the normal path's again.
    The replay itself: tests/ops/test_replay.py, and on a GPU test_an_eager_forward_is_replayed."""
    module = make(cell, 5, 37, backend="triton")
    x = torch.randn(7, 3, 5)
    hx = _states(cell, module, 3, seed=2) if with_state else None
    with torch.no_grad():
        cell_name = module.cell
        launch, reason = module._launch(x, cell_name, None)
        assert reason is None
        got = module._recorded_forward(x, hx, cell_name, launch)
        want = module(x, hx)
    assert torch.equal(got[0], want[0])
    finals = zip(got[1], want[1]) if cell == "lstm" else [(got[1], want[1])]
    assert all(torch.equal(a, b) for a, b in finals)
    (weights, kept_launch, layer), = rnn._REPLAYS[module].values()
    assert layer.forward is None and layer.refused == {"forward": 1}


@needs_interpreter
def test_a_refused_forward_recording_is_tried_only_so_often(monkeypatch):
    """A forward recording that gives no replay (under the interpreter every one: no direct
    launch) is tried ``ATTEMPTS`` times for its key, then the key's calls take the normal path
    without recording (a recording's dispatch mode costs every call it wraps); another key is
    tried afresh."""
    from rnnbench.ops import replay
    from rnnbench.ops.replayed_layer import ATTEMPTS

    made = []
    recording = replay.recording
    monkeypatch.setattr(replay, "recording", lambda *a: made.append(1) or recording(*a))
    module = make("gru", 5, 37, backend="triton")
    with torch.no_grad():
        for x in (torch.randn(7, 3, 5), torch.randn(7, 3, 5), torch.randn(7, 3, 5), torch.randn(7, 3, 5)):
            launch, reason = module._launch(x, "gru", None)
            got = module._recorded_forward(x, None, "gru", launch)
            assert torch.equal(got[0], module(x)[0])
        assert len(made) == ATTEMPTS
        other = torch.randn(7, 4, 5)  # another batch: another key
        module._recorded_forward(other, None, "gru", module._launch(other, "gru", None)[0])
    assert len(made) == ATTEMPTS + 1


@needs_interpreter
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("with_state", [True, False], ids=["hx", "no_hx"])
@pytest.mark.parametrize("cell", CELLS)
def test_a_recorded_training_call_returns_what_the_module_returns(cell, with_state, bias):
    """With gradients wanted, the recording of an eager call (``_recorded_forward``: the layer
    through ``ReplayedLayer``, its states and weights handed to it as the normal path hands them)
    returns the normal path's output, final states and every gradient; under the interpreter no
    replay is built, so this is the path's wiring. A state of the wrong shape raises as the normal
    path does."""
    from rnnbench.ops import replay

    module = make(cell, 5, 37, backend="triton", bias=bias)
    x = torch.randn(7, 3, 5, requires_grad=True)
    hx = _states(cell, module, 3, seed=2) if with_state else None
    if hx is not None:
        for s in (hx if isinstance(hx, tuple) else (hx,)):
            s.requires_grad_(True)
    leaves = [x, *([] if hx is None else hx if isinstance(hx, tuple) else [hx]), *module.parameters()]

    def step(call):
        output, finals = call()
        finals = list(finals) if isinstance(finals, tuple) else [finals]
        loss = sum((t * torch.linspace(-1, 1, t.numel()).view(t.shape)).sum() for t in [output, *finals])
        return [output.detach(), *(f.detach() for f in finals), *torch.autograd.grad(loss, leaves)]

    cell_name = module.cell
    launch, reason = module._launch(x, cell_name, None)
    assert reason is None
    got = step(lambda: module._recorded_forward(x, hx, cell_name, launch))
    assert rnn._REPLAYS.get(module), "the training call was not taken through ReplayedLayer"
    rnn._REPLAYS.pop(module)
    try:
        replay.ENABLED = False
        want = step(lambda: module(x, hx))
    finally:
        replay.ENABLED = True
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    wrong = torch.randn(1, 4, 37)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        module._recorded_forward(x, (wrong, wrong) if cell == "lstm" else wrong, cell_name, launch)


@needs_interpreter
def test_a_replay_key_changes_with_everything_the_path_decides_on(monkeypatch):
    """``_replay_key``: one call's key equals another's only where the normal path would decide
    the same: another batch, states given or not, the TF32 switch (fp32, past 16 units: not below,
    where TF32 multiplies strictly), strict fp32's mode, a plan override, autocast, the backend or a
    weight's device each give another key; a strided or misaligned input none at all. (The dot
    precision as on CUDA: the interpreter's is ieee whatever the switches.)"""
    from rnnbench.ops import plans
    from rnnbench.ops.recurrence import plan_override, strict_fp32
    from rnnbench.precision import matmul_mode

    monkeypatch.setattr(plans, "INTERPRET", False)

    module = make("lstm", 8, 24, backend="triton")  # (past 16 units: TF32 is TF32)
    x, hx = torch.randn(5, 3, 8), (torch.randn(1, 3, 24), torch.randn(1, 3, 24))

    def key(x=x, states=hx):
        return module._replay_key(x, states, module._replay_weights())

    with matmul_mode("fp32"):
        base = key()
        assert key() == base and key(torch.randn(5, 3, 8)) == base  # same shapes, other values
        others = [key(torch.randn(5, 4, 8), (torch.randn(1, 4, 24),) * 2), key(states=())]
        with strict_fp32("ieee"):
            others.append(key())
        with plan_override(block_b=16):
            others.append(key())
        module.backend = "auto"
        others.append(key())
        module.backend = "triton"
        weight = module._flat_weights[1]
        module._flat_weights[1] = weight.to("meta")  # a weight on another device (as after .cpu())
        others.append(key())
        module._flat_weights[1] = weight
        assert key(torch.randn(3, 5, 8).transpose(0, 1)) is None  # strided
        assert key(torch.randn(5 * 3 * 8 + 1)[1:].view(5, 3, 8)) is None  # 4 bytes off the boundary
    with matmul_mode("tf32"):
        others.append(key())
    with torch.autocast("cpu"):
        others.append(key())
    assert [k is not None and k != base for k in others] == [True] * len(others)
    assert len(set(others)) == len(others)
    narrow = make("lstm", 8, 16, backend="triton")  # (up to 16 units TF32 multiplies strictly: plans.layer_precision)
    narrow_hx = (torch.randn(1, 3, 16), torch.randn(1, 3, 16))
    keys = []
    for mode in ("fp32", "tf32"):
        with matmul_mode(mode):
            keys.append(narrow._replay_key(x, narrow_hx, narrow._replay_weights()))
    assert keys[0] is not None and keys[0] == keys[1]


@needs_interpreter
def test_a_module_whose_weights_are_misaligned_is_never_recorded():
    """A weight off a 16-byte boundary (as torch.nn's flattened weights leave some biases): the
    kernels were specialised on aligned pointers, so no replay may stand in, and the module is not
    tried again (the key's checks would cost every call); its call is the normal path's."""
    module = make("gru", 5, 37, backend="triton")
    bias = module.bias_hh_l0
    storage = torch.empty(bias.numel() + 1)
    module.bias_hh_l0.data = storage[1:].copy_(bias.detach())  # 4 bytes past the boundary
    x = torch.randn(7, 3, 5)
    with torch.no_grad():
        launch, reason = module._launch(x, "gru", None)
        got = module._recorded_forward(x, None, "gru", launch)
        want = module(x)
    assert module in rnn._UNREPLAYABLE and rnn._REPLAYS.get(module) is None
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    aligned = make("gru", 5, 36, backend="triton")
    with torch.no_grad():
        aligned._recorded_forward(x, None, "gru", aligned._launch(x, "gru", None)[0])
    assert aligned not in rnn._UNREPLAYABLE


STACKS = [(2, False), (1, True), (2, True)]


def _stack_call(module, x, hx, train):
    """The normal path (``module(...)`` on CPU tensors before any recording: a module with no
    replays kept) and ``_recorded_forward`` (the first call of a shape that may be replayed on
    CUDA) on the same inputs: each one's output and final states, and with ``train`` the
    gradients of one loss on them with respect to the input, the states and every parameter;
    ``(recorded, normal)``."""
    cell = module.cell
    states = [] if hx is None else list(hx) if isinstance(hx, tuple) else [hx]
    leaves = [x, *states, *module.parameters()] if train else []
    results = []
    assert rnn._REPLAYS.get(module) is None
    for call in (lambda: module(x, hx),
                 lambda: module._recorded_forward(x, hx, cell, module._launch(x, cell, None)[0])):
        with torch.set_grad_enabled(train):
            output, finals = call()
        outs = _flat(cell, output, finals)
        results.append([o.detach() for o in outs] + (_random_loss_grads(outs, leaves) if train else []))
    return results[::-1]


@needs_interpreter
@pytest.mark.parametrize("train", [False, True], ids=["no_grad", "train"])
@pytest.mark.parametrize("with_state", [True, False], ids=["hx", "no_hx"])
@pytest.mark.parametrize("num_layers, bidirectional", STACKS, ids=["2_layers", "bidirectional", "2_bidirectional"])
@pytest.mark.parametrize("cell", CELLS)
def test_a_stacked_call_is_recorded_layer_by_layer(cell, num_layers, bidirectional, with_state, train):
    """A module of several layers or two directions: its recorded call (on CUDA, a replayable
    first call) is the normal path around its layers, each layer and direction through its own
    ``LayerReplays`` (``ops/replayed_layer.run_layer``), kept for the call's key in ``_REPLAYS``
    (a tuple of them in the one-layer entry's place). Under the interpreter every recording is refused (no direct launch), so
    each layer's refused recordings show it went that way: under no_grad a forward recording each,
    with gradients ``ReplayedLayer``'s forward and backward (a bidirectional layer's output
    gradient, a strided half of the stack's, made contiguous for it). The output, final states and (training) every gradient
    are the normal path's, bit for bit. At batch 4, hidden 36 every layer's tensors are aligned (a
    plane of 576 bytes); the replay itself is a GPU test's (test_a_stacked_eager_call_is_replayed)."""
    module = make(cell, 5, 36, backend="triton", num_layers=num_layers, bidirectional=bidirectional)
    x = torch.randn(7, 4, 5, requires_grad=train)
    hx = _states(cell, module, 4, seed=2) if with_state else None
    for s in ([] if hx is None else hx if isinstance(hx, tuple) else [hx]):
        s.requires_grad_(train)
    got, want = _stack_call(module, x, hx, train)
    assert len(got) == len(want) and all(torch.equal(g, w) for g, w in zip(got, want))
    (weights, launch, layers), = rnn._REPLAYS[module].values()
    assert type(layers) is tuple and len(layers) == num_layers * (2 if bidirectional else 1)
    asked = {"forward": 1, "backward": 1} if train else {"forward": 1}
    assert all(layer.refused == asked and layer.forward is None for layer in layers), [layer.refused for layer in layers]


@needs_interpreter
def test_a_stacked_layer_off_the_boundary_or_wanting_no_gradient_takes_the_normal_path():
    """A layer of a stack whose tensors are not all 16-byte aligned runs the normal path,
    unrecorded: at batch 3, hidden 37 in fp32 a plane is 444 bytes, so the second layer's input
    (the first one's output, a view one plane into its hidden states) and its initial states (a
    view one layer into the module's) are off the boundary; the first layer's are not. With
    gradients enabled but none wanted (frozen weights, inputs without), no layer is recorded
    either (the call's key does not say which layers would want them). Results as the normal
    path's."""
    module = make("lstm", 5, 37, backend="triton", num_layers=2)
    hx = _states("lstm", module, 3, seed=2)
    got, want = _stack_call(module, torch.randn(7, 3, 5), hx, train=False)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    (_, _, (first, second)), = rnn._REPLAYS[module].values()
    assert first.refused == {"forward": 1} and second.refused == {}
    frozen = make("gru", 5, 36, backend="triton", num_layers=2).requires_grad_(False)
    x = torch.randn(7, 4, 5)
    want = frozen(x)
    got = frozen._recorded_forward(x, None, "gru", frozen._launch(x, "gru", None)[0])
    assert all(torch.equal(g, w) for g, w in zip(_flat("gru", *got), _flat("gru", *want)))
    (_, _, layers), = rnn._REPLAYS[frozen].values()
    assert [layer.refused for layer in layers] == [{}, {}]


@needs_interpreter
def test_a_stacked_modules_later_calls_take_its_layers_replays_without_the_plans_lookup(monkeypatch):
    """Once a stacked module's call is kept for its key, a later call of that key goes straight
    to its layers' replays (``_replayed``: the key stands for the normal path's checks and plan
    lookup, ``_launch`` never called), each layer recording again until ``ATTEMPTS`` refusals
    (under the interpreter every recording is refused), then running the normal path; every
    call's results are the normal path's. A call of another key (another batch) is not."""
    from rnnbench.ops import replay
    from rnnbench.ops.replayed_layer import ATTEMPTS

    module = make("lstm", 5, 36, backend="triton", num_layers=2, bidirectional=True)
    x, hx = torch.randn(7, 4, 5), _states("lstm", module, 4, seed=2)
    with torch.no_grad():
        module._recorded_forward(x, hx, "lstm", module._launch(x, "lstm", None)[0])
        (_, _, layers), = rnn._REPLAYS[module].values()
        replay.ENABLED = False
        try:
            want = _flat("lstm", *module(x, hx))  # (the normal path: no replay may stand in)
        finally:
            replay.ENABLED = True
        monkeypatch.setattr(type(module), "_launch", lambda *a: pytest.fail("the plans were looked up"))
        for _ in range(ATTEMPTS + 1):
            got = _flat("lstm", *module(x, hx))
            assert all(torch.equal(g, w) for g, w in zip(got, want))
        assert [layer.refused for layer in layers] == [{"forward": ATTEMPTS}] * 4
        with pytest.raises(pytest.fail.Exception, match="plans were looked up"):
            module(torch.randn(7, 3, 5), _states("lstm", module, 3, seed=2))


def test_auto_backend_falls_back_visibly_once(monkeypatch):
    """Not interpreted and on the CPU: torch.nn's path, one warning, torch.nn's exact results."""
    pytest.importorskip("triton")  # without it, that is the reason given
    monkeypatch.setattr(rnn, "_interpreted", lambda: False)
    monkeypatch.setattr(rnn, "_WARNED", set())
    torch.manual_seed(0)
    theirs = torch.nn.GRU(5, 37)
    ours = rnn.GRU(5, 37)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(7, 3, 5)
    with pytest.warns(RuntimeWarning, match="CPU tensors.*PyTorch's own path"):
        out, h = ours(x)
    assert torch.equal(out, theirs(x)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours(x)  # announced once, not on every call
    with pytest.raises(RuntimeError, match=r"backend='triton'\) cannot run this call: CPU tensors"):
        rnn.GRU(5, 37, backend="triton")(x)


def test_refused_dtype_falls_back_or_raises():
    pytest.importorskip("triton")  # without it, that is the reason given
    x = torch.randn(7, 3, 5, dtype=torch.float64)
    auto = rnn.LSTM(5, 37).double()
    with pytest.warns(RuntimeWarning, match="float64"):
        out, _ = auto(x)
    assert out.dtype == torch.float64
    with pytest.raises(RuntimeError, match="cannot run this call"):
        rnn.LSTM(5, 37, backend="triton").double()(x)


def test_proj_size_runs_on_torch_with_a_warning():
    pytest.importorskip("triton")  # without it, that is the reason given
    torch.manual_seed(0)
    module = rnn.LSTM(5, 37, proj_size=4)
    with pytest.warns(RuntimeWarning, match="proj_size"):
        out, (h, c) = module(torch.randn(7, 3, 5))
    assert out.shape == (7, 3, 4) and c.shape == (1, 3, 37)


def check_packed(cell, lengths, with_state=True, dtype=torch.float32, **kwargs):
    """A PackedSequence (sequences of ``lengths``, packed unsorted) through the module on the
    kernels against torch.nn in float64 on the same weights, the judge of what a packed batch
    means (each sequence's own final states, the reverse direction from each one's own end, the
    output packed in the input's order): the packing, the output's data, h_n (and c_n) and the
    gradients of every sequence, of hx and of every parameter."""
    _, theirs_cls, extra = MODULES[cell]
    ours = make(cell, 5, 37, backend="triton", **kwargs).to(dtype)
    theirs = theirs_cls(5, 37, **extra, **kwargs).double()
    theirs.load_state_dict(ours.state_dict())
    gen = torch.Generator().manual_seed(3)
    seqs = [torch.randn(n, 5, generator=gen) for n in lengths]
    hx = _states(cell, ours, len(lengths), 4) if with_state else None

    def run(module, dtype):
        xs = [s.to(dtype).requires_grad_() for s in seqs]
        states = None if hx is None else (tuple(h.to(dtype).requires_grad_() for h in hx) if cell == "lstm"
                                          else hx.to(dtype).requires_grad_())
        packed = pack_sequence(xs, enforce_sorted=False)
        out, finals = module(packed, states)
        outs = [out.data, *(finals if cell == "lstm" else [finals])]
        leaves = [*xs, *(() if states is None else states if cell == "lstm" else [states]), *module.parameters()]
        return out, outs, _random_loss_grads(outs, leaves)

    got_packed, got, got_grads = run(ours, dtype)
    ref_packed, ref, ref_grads = run(theirs, torch.float64)
    for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        assert torch.equal(getattr(got_packed, field), getattr(ref_packed, field)), field
    tol = tolerance(cell, {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype])
    names = ["output", "h_n", "c_n"][: len(ref)] + [f"grad_x{i}" for i in range(len(seqs))]
    names += (["grad_h0", "grad_c0"][: 2 if cell == "lstm" else 1] if with_state else [])
    names += [f"grad_{n}" for n, _ in ours.named_parameters()]
    _assert_all_close(names, [*got, *got_grads], [*ref, *ref_grads], tol, dtype)


PACKED_CONFIGS = {"L2-bidirectional": dict(num_layers=2, bidirectional=True),
                  "L1-batch_first": dict(batch_first=True), "L1-no_bias": dict(bias=False)}


@needs_interpreter
@pytest.mark.parametrize("config", list(PACKED_CONFIGS))
@pytest.mark.parametrize("cell", CELLS)
def test_packed_sequence_matches_torch_nn(cell, config):
    check_packed(cell, [4, 7, 1, 7, 3], **PACKED_CONFIGS[config])


@needs_interpreter
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_packed_sequence_without_state_and_of_equal_lengths(cell):
    """No hx; and every sequence full length, where the kernels run without lengths."""
    check_packed(cell, [3, 1, 2], with_state=False, num_layers=2, bidirectional=True)
    check_packed(cell, [4, 4, 4], num_layers=2, bidirectional=True)


@needs_interpreter
def test_packed_sequence_in_bf16():
    check_packed("lstm", [4, 7, 1, 7, 3], dtype=torch.bfloat16, num_layers=2, bidirectional=True)


def check_lengths(cell, backend, batch_first=False, **kwargs):
    """The padded batch with ``lengths=`` against torch.nn in float64 on the same sequences packed:
    output (zeros past each end), h_n (and c_n), and the gradients of the input (zero at padding),
    hx and every parameter."""
    _, theirs_cls, extra = MODULES[cell]
    ours = make(cell, 5, 37, backend=backend, batch_first=batch_first, **kwargs)
    theirs = theirs_cls(5, 37, **extra, batch_first=batch_first, **kwargs).double()
    theirs.load_state_dict(ours.state_dict())
    lengths = torch.tensor([4, 7, 1, 7, 3])
    gen = torch.Generator().manual_seed(3)
    x = torch.randn((5, 7, 5) if batch_first else (7, 5, 5), generator=gen)
    hx = _states(cell, ours, 5, 4)

    def run(module, dtype, packed):
        xi = x.to(dtype).requires_grad_()
        states = tuple(h.to(dtype).requires_grad_() for h in hx) if cell == "lstm" else hx.to(dtype).requires_grad_()
        if packed:
            p = torch.nn.utils.rnn.pack_padded_sequence(xi, lengths, batch_first, enforce_sorted=False)
            out, finals = module(p, states)
            out = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first, total_length=7)[0]
        else:
            out, finals = module(xi, states, lengths)
        outs = [out, *(finals if cell == "lstm" else [finals])]
        leaves = [xi, *(states if cell == "lstm" else [states]), *module.parameters()]
        return outs + _random_loss_grads(outs, leaves)

    got, ref = run(ours, torch.float32, packed=False), run(theirs, torch.float64, packed=True)
    names = ["output", "h_n", "c_n"][: 3 if cell == "lstm" else 2] + ["grad_x"]
    names += ["grad_h0", "grad_c0"][: 2 if cell == "lstm" else 1] + [f"grad_{n}" for n, _ in ours.named_parameters()]
    _assert_all_close(names, got, ref, FP32)


@needs_interpreter
@pytest.mark.parametrize("config", list(PACKED_CONFIGS))
@pytest.mark.parametrize("cell", CELLS)
def test_padded_batch_with_lengths_matches_torch_nn_packed(cell, config):
    check_lengths(cell, "triton", **PACKED_CONFIGS[config])


@pytest.mark.parametrize("batch_first", [False, True])
def test_lengths_on_the_torch_backend_packs_for_torch_nn(batch_first):
    check_lengths("gru", "torch", batch_first=batch_first, num_layers=2, bidirectional=True)


def test_lengths_refused_in_one_line():
    module = rnn.GRU(5, 37, backend="torch")
    with pytest.raises(ValueError, match="lengths goes with a padded, batched input"):
        module(pack_sequence([torch.randn(4, 5)]), None, torch.tensor([4]))
    with pytest.raises(ValueError, match="lengths goes with a padded, batched input"):
        module(torch.randn(4, 5), None, torch.tensor([4]))


@needs_interpreter
def test_lengths_out_of_range_refused_in_one_line():
    with pytest.raises(ValueError, match="lengths must be from 0 to seq_len"):
        rnn.GRU(5, 37, backend="triton")(torch.randn(7, 3, 5), None, torch.tensor([3, 8, 1]))


def test_packed_sequence_on_the_torch_backend_is_torch_nn():
    torch.manual_seed(0)
    theirs = torch.nn.GRU(5, 37)
    ours = rnn.GRU(5, 37, backend="torch")
    ours.load_state_dict(theirs.state_dict())
    packed = pack_sequence([torch.randn(4, 5), torch.randn(2, 5)])
    (a, ha), (b, hb) = theirs(packed), ours(packed)
    assert torch.equal(a.data, b.data) and torch.equal(ha, hb)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'cudnn'"):
        rnn.GRU(5, 37, backend="cudnn")
    assert "backend='torch'" in repr(rnn.GRU(5, 37, backend="torch"))


@needs_interpreter
def test_wrong_state_shape_is_an_error():
    module = rnn.GRU(5, 37, backend="triton")
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        module(torch.randn(7, 3, 5), torch.zeros(1, 2, 37))


@needs_interpreter
def test_dropout_between_layers_in_training_only():
    torch.manual_seed(0)
    module = rnn.LSTM(5, 37, num_layers=2, dropout=0.5, backend="triton")
    x = torch.randn(7, 3, 5)
    module.eval()
    reference = module(x)[0]
    plain = rnn.LSTM(5, 37, num_layers=2, backend="triton")
    plain.load_state_dict(module.state_dict())
    assert torch.equal(plain(x)[0], reference)  # eval: no dropout
    module.train()
    torch.manual_seed(3)
    first = module(x)[0]
    torch.manual_seed(3)
    assert torch.equal(module(x)[0], first)  # the mask follows torch's RNG
    assert relative_error(first, reference) > 1e-2  # and changes the result


@needs_interpreter
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_autocast_runs_the_kernels_in_its_dtype(cell):
    """fp32 module under torch.autocast(bf16): the kernels run in bf16 as torch.nn's layers do;
    gradients reach the fp32 parameters in fp32."""
    module = make(cell, 5, 37, backend="triton", num_layers=2)
    x = torch.randn(7, 3, 5, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, finals = module(x)
    assert out.dtype == torch.bfloat16
    params = dict(module.named_parameters())
    grads = torch.autograd.grad(out.float().pow(2).sum(), [x, *params.values()])
    assert all(g.dtype == torch.float32 for g in grads)
    wide = {n: p.detach().double().requires_grad_() for n, p in params.items()}
    xr = x.detach().double().requires_grad_()
    ref, _ = naive_network(cell, {n: w.to(torch.bfloat16).double() for n, w in wide.items()}, xr.to(torch.bfloat16).double(),
                           None, 2)
    ref_grads = torch.autograd.grad(ref.pow(2).sum(), [xr, *wide.values()])
    tol = tolerance(cell, "bf16")
    assert relative_error(out, ref) <= tol
    for g, r in zip(grads, ref_grads):
        assert relative_error(g, r) <= tol


class _Tagger(torch.nn.Module):
    """Embedding -> recurrent module -> linear: a model a user would hand to torch.compile."""

    def __init__(self, recurrent):
        super().__init__()
        self.embed = torch.nn.Embedding(11, recurrent.input_size)
        self.recurrent = recurrent
        self.head = torch.nn.Linear(recurrent.hidden_size, 11)

    def forward(self, tokens):
        output, _ = self.recurrent(self.embed(tokens))
        return self.head(torch.tanh(output))


@needs_interpreter
@pytest.mark.parametrize("cell", CELLS)
def test_which_outputs_may_be_modified_in_place(cell):
    """As the module docstring says: with gradients wanted the output (a view of the saved hidden
    states) is refused in place, h_n is not; under no_grad the output is too."""
    module = make(cell, 5, 7, backend="triton")
    x = torch.randn(4, 3, 5)
    output, h_n = module(x)
    with pytest.raises(RuntimeError, match="inplace"):
        output.mul_(2)
    (h_n[0] if cell == "lstm" else h_n).mul_(2)
    with torch.no_grad():
        output, _ = module(x)
        expected = output * 2
        output.mul_(2)
    assert torch.equal(output, expected)


def test_only_a_compiled_models_call_takes_the_compilers_wrapper(monkeypatch):
    """An eager call runs the forward itself (the compiler's wrapper cost host time every call); a
    call from a compiled model goes through the wrapper that keeps the compiler out of it (the
    torch backend: no kernels needed), the same output as eager."""
    calls = []
    untraced = rnn._UNTRACED_FORWARD
    monkeypatch.setattr(rnn, "_UNTRACED_FORWARD", lambda *a: calls.append(1) or untraced(*a))
    module = make("gru", 5, 7, backend="torch")
    x = torch.randn(4, 3, 5)
    want = module(x)[0]
    assert calls == []
    torch._dynamo.reset()
    got = torch.compile(lambda t: module(t)[0] * 2, backend="eager")(x)
    assert calls, "a compiled model's call ran the forward outside the compiler's wrapper"
    torch.testing.assert_close(got, want * 2)


@needs_interpreter
@pytest.mark.parametrize("cell", CELLS)
def test_runs_inside_a_compiled_model(cell):
    """torch.compile of a model holding the module runs our kernels eagerly between its graphs (as
    it runs torch.nn's recurrent modules): the same output and gradients as the model uncompiled.
    Traced instead, the kernels' launch crashed the compiler. ``aot_eager``: the compiler's own
    tracing and autograd, without the C++ toolchain inductor needs on the CPU."""
    model = _Tagger(make(cell, 5, 37, backend="triton", num_layers=2))
    tokens = torch.randint(0, 11, (7, 3), generator=torch.Generator().manual_seed(3))
    params = list(model.parameters())
    torch._dynamo.reset()
    got = torch.compile(model, backend="aot_eager")(tokens)
    got_grads = torch.autograd.grad(got.pow(2).sum(), params)
    want = model(tokens)
    want_grads = torch.autograd.grad(want.pow(2).sum(), params)
    names = ["output"] + [f"grad_{n}" for n, _ in model.named_parameters()]
    _assert_all_close(names, [got, *got_grads], [want, *want_grads], 1e-6)
