"""Layer normalization in rnnbench.nn (``layer_norm=True``): what cuDNN drops.

Ba, Kiros and Hinton's layer-normalized cells (``rnnbench.reference.LayerNormWeights``) against the
float64 network (``ops/naive.py`` -> ``rnnbench.reference``) over odd sizes, with and without
states, two layers both ways, batch_first, no bias, variable lengths: on ``ops/loop.py``'s loop
and on our kernels, with gradients (output, final states and every gradient, the gains' too; the
loop with recurrent dropout) and without (Triton's interpreter on CPU tensors, CUDA cases marked;
past the widths one program holds, the exchange plans: tests/ops/test_concurrent_programs.py). The gains are drawn away from their initial ones and zeros, so that a gain put in
the wrong place shows. Then the reference's own property (a product's scale is normalized away),
which shapes the kernels plan for, the parameters, the paths and the errors.
"""

from __future__ import annotations

import importlib.util
import warnings

import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

from rnnbench import nn as rnn
from rnnbench.ops.naive import LAYER_NORM_NAMES, naive_network
from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

from module_check import TORCH_DTYPE, check_against_naive
from test_nn import _interpreted, needs_interpreter

MODULES = {"lstm": (rnn.LSTM, {}), "gru": (rnn.GRU, {}), "rnn_tanh": (rnn.RNN, {"nonlinearity": "tanh"}),
           "rnn_relu": (rnn.RNN, {"nonlinearity": "relu"})}


@pytest.fixture(autouse=True)
def _each_test_sees_the_warning(monkeypatch):
    if _interpreted():
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(rnn, "_WARNED", set())


def make(cell, input_size, hidden_size, **kwargs):
    """A layer-normalized module whose gains and shifts are drawn (0.5 to 1.5, and about 0 by 0.3),
    each its own, instead of the ones and zeros it starts from."""
    module, extra = MODULES[cell]
    torch.manual_seed(0)
    m = module(input_size, hidden_size, **extra, layer_norm=True, **kwargs)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.startswith("ln_bias"):
                p.normal_(0.0, 0.3)
            elif name.startswith("ln_"):
                p.uniform_(0.5, 1.5)
    return m


def check(cell, backend, batch, seq, input_size, hidden_size, with_state=True, lengths=None, device="cpu",
          dtype="fp32", gradients=True, **kwargs):
    """The module's training call (or, without ``gradients``, its call under no_grad) against
    naive_network in float64 (``module_check``); with ``recurrent_dropout`` given, with the masks it
    drew. Returns the warnings the call gave."""
    module = make(cell, input_size, hidden_size, backend=backend, **kwargs).to(device, TORCH_DTYPE[dtype])
    masks = None
    if module.recurrent_dropout:
        masks, draw = [], module._recurrent_mask
        module._recurrent_mask = lambda *args: masks.append(draw(*args)) or masks[-1]
    return check_against_naive(cell, module, batch, seq, input_size, with_state, lengths, device, dtype, masks,
                               gradients)


# (batch, seq, input, hidden, options)
CONFIGS = {
    "B3-T7-I5-H37-L2-bidirectional": (3, 7, 5, 37, dict(num_layers=2, bidirectional=True)),
    "B1-T1-I3-H100-no_state": (1, 1, 3, 100, dict(with_state=False)),
    "B3-T7-I5-H37-batch_first-no_bias": (3, 7, 5, 37, dict(batch_first=True, bias=False)),
    "B3-T7-I5-H37-lengths-bidirectional": (3, 7, 5, 37, dict(bidirectional=True, lengths=torch.tensor([7, 0, 3]))),
    "B3-T7-I5-H37-recurrent_dropout": (3, 7, 5, 37, dict(recurrent_dropout=0.4)),
}


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("cell", MODULES)
def test_loop_against_reference(cell, config):
    """``backend="torch"``: the loop, silently (torch.nn has no layer-normalized path to prefer)."""
    batch, seq, input_size, hidden_size, options = CONFIGS[config]
    assert not check(cell, "torch", batch, seq, input_size, hidden_size, **options)


@needs_interpreter
@pytest.mark.parametrize("config", [c for c in CONFIGS if "dropout" not in c])
@pytest.mark.parametrize("cell", MODULES)
def test_kernels_without_gradients_against_reference(cell, config):
    """Without gradients the kernels take it (``backend="triton"``: no fallback, no warning)."""
    batch, seq, input_size, hidden_size, options = CONFIGS[config]
    assert not check(cell, "triton", batch, seq, input_size, hidden_size, gradients=False, **options)


@needs_interpreter
@pytest.mark.parametrize("options", [{}, dict(num_layers=2, bidirectional=True)], ids=["one_layer", "stack"])
@pytest.mark.parametrize("cell", MODULES)
def test_a_recorded_call_without_gradients_is_the_normal_paths(cell, options):
    """The path a replayable call takes on CUDA (``_recorded_forward``; a stack's layers through
    ``ops/replayed_layer.run_layer``), here under the interpreter, where every recording is refused
    (no direct launch): the layer norm must reach the kernels that way too, so the outputs are the
    normal path's, and each layer's forward was offered for recording."""
    module = make(cell, 5, 36, backend="triton", **options)
    x = torch.randn(7, 4, 5)
    with torch.no_grad():
        launch, reason = module._launch(x, module.cell, None)
        assert reason is None
        want = module(x)  # (first: once kept, a stack's key would send this call through its layers' replays)
        got = module._recorded_forward(x, None, module.cell, launch)
    flat = [got[0], *(got[1] if cell == "lstm" else (got[1],))]
    for a, b in zip(flat, [want[0], *(want[1] if cell == "lstm" else (want[1],))], strict=True):
        assert torch.equal(a, b)
    (_, _, kept), = rnn._REPLAYS[module].values()
    refused = [layer.refused for layer in (kept if type(kept) is tuple else [kept])]
    assert all(r == {"forward": 1} for r in refused), refused


@needs_interpreter
def test_a_replay_takes_the_gains_and_refuses_a_misaligned_one():
    """What a replay of a layer-normalized call takes besides the input and states
    (``_replay_weights``, which the replay key checks and a replay launches with): torch.nn's
    weights, then every gain, each the module's own parameter; a gain off a 16-byte boundary
    (the kernels were specialised on aligned pointers) leaves the call no key, so no replay."""
    module = make("lstm", 5, 36, num_layers=2, bidirectional=True)
    weights = module._replay_weights()
    flat = module._flat_weights
    assert all(a is b for a, b in zip(weights, flat, strict=False)) and len(weights) > len(flat)
    gains = [p for name, p in module.named_parameters() if name.startswith("ln_")]
    assert sorted(map(id, weights[len(flat):])) == sorted(map(id, gains))
    x, states = torch.randn(7, 4, 5), ()
    assert module._replay_key(x, states, weights) is not None
    module.ln_weight_hh_l1_reverse = torch.nn.Parameter(torch.ones(4 * 36 + 1)[1:])  # 4 bytes off
    assert module._replay_key(x, states, module._replay_weights()) is None


@needs_interpreter
@pytest.mark.parametrize("config", [c for c in CONFIGS if "dropout" not in c])
@pytest.mark.parametrize("cell", MODULES)
def test_kernels_train_against_reference(cell, config):
    """With gradients the kernels take it (``ops/layer_norm.py``: the forward saving, the backward
    through every norm): output, final states and every gradient, the gains' too."""
    batch, seq, input_size, hidden_size, options = CONFIGS[config]
    assert not check(cell, "triton", batch, seq, input_size, hidden_size, **options)


@needs_interpreter
def test_kernels_train_the_lstm_in_bfloat16_and_with_recurrent_dropout_on_the_loop():
    """In bf16 on the kernels; with recurrent dropout (no kernel has both) on the loop, said once."""
    assert not check("lstm", "triton", 3, 7, 5, 37, dtype="bf16")
    said = check("lstm", "auto", 3, 7, 5, 37, recurrent_dropout=0.4)
    assert len(said) == 1 and "layer_norm with recurrent dropout has no kernel" in said[0], said


@needs_interpreter
def test_kernels_in_bfloat16():
    assert not check("lstm", "triton", 3, 7, 5, 37, dtype="bf16", gradients=False)


def test_cpu_without_the_interpreter_runs_the_loop(monkeypatch):
    monkeypatch.setattr(rnn, "_interpreted", lambda: False)
    said = check("gru", "auto", 3, 7, 5, 37, gradients=False)
    assert len(said) == 1 and "CPU tensors" in said[0]


def test_triton_backend_refuses_recurrent_dropout_with_it():
    module = make("gru", 4, 8, backend="triton", recurrent_dropout=0.3)
    with pytest.raises(RuntimeError, match="cannot run this call: layer_norm with recurrent dropout has no kernel"):
        module(torch.randn(3, 2, 4))


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_kernels_plan_a_row_in_one_program_where_it_fits():
    """``recurrence.LAYER_NORM_PLAN`` planned for an H200's 132 multiprocessors at batch 20: every plan
    holds a row in one program on the ``tl`` kernels, and the widths it reaches are the ones
    ``layer_norm_launch_or_refusal`` names (LSTM and GRU to hidden 64 in fp32, 128 in 16-bit; the
    RNN to 128 and 256); wider ones are refused (and take the exchange plans). Each cell's backward
    (its training on the kernels) holds a row in one program to the same widths, and no further."""
    from rnnbench.ops.plans import choose_plan
    from rnnbench.ops.recurrence import LAYER_NORM_PLAN

    widest = {}
    for gates in (4, 3, 1):
        for dtype, precision in ((torch.float32, "tf32"), (torch.float32, "tf32x3"), (torch.bfloat16, "ieee")):
            for hidden in (37, 64, 100, 128, 200, 256, 512):
                try:
                    p = choose_plan(20, hidden, gates, dtype, torch.device("cuda"), multiprocessors=132,
                                    precision=precision, direction="forward", **LAYER_NORM_PLAN)
                except ValueError:
                    continue
                assert p.h_on_chip and not (p.fma or p.gluon or p.produce or p.pieces > 1), p
                widest[gates, precision] = hidden
    assert widest == {(4, "tf32"): 64, (4, "tf32x3"): 64, (4, "ieee"): 128, (3, "tf32"): 64, (3, "tf32x3"): 64,
                      (3, "ieee"): 128, (1, "tf32"): 128, (1, "tf32x3"): 128, (1, "ieee"): 256}
    for gates in (4, 3, 1):
        for precision, dtype in (("tf32", torch.float32), ("tf32x3", torch.float32), ("ieee", torch.bfloat16)):
            for hidden in (widest[gates, precision], 2 * widest[gates, precision]):
                try:
                    p = choose_plan(20, hidden, gates, dtype, torch.device("cuda"), multiprocessors=132,
                                    precision=precision, direction="backward", **LAYER_NORM_PLAN)
                except ValueError:
                    assert hidden > widest[gates, precision]
                    continue
                assert hidden == widest[gates, precision] and p.h_on_chip and not (
                    p.fma or p.pieces > 1 or p.split_k or p.gate_split), (gates, precision, p)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
@pytest.mark.parametrize("gates", [4, 3, 1])
def test_kernels_plan_the_wider_ones_across_programs_both_ways(gates):
    """Past the on-chip widths, ``recurrence.LAYER_NORM_EXCHANGE_PLAN`` planned for an H200 at batch
    20, to hidden 4096: every forward and backward spreads a row over programs (the statistics
    exchanged) on the ``tl`` kernels without the FMA, slices, split-K or gate split, none of which
    takes ``LN``, so that training at any of these widths stays on the kernels."""
    from rnnbench.ops.plans import choose_plan
    from rnnbench.ops.recurrence import LAYER_NORM_EXCHANGE_PLAN

    for dtype, precision in ((torch.float32, "tf32"), (torch.float32, "tf32x3"), (torch.bfloat16, "ieee")):
        for hidden in (100, 256, 650, 1024, 2048, 4096):
            for direction in ("forward", "backward"):
                p = choose_plan(20, hidden, gates, dtype, torch.device("cuda"), multiprocessors=132, precision=precision,
                                direction=direction, bounded=gates > 1, **LAYER_NORM_EXCHANGE_PLAN)
                assert not (p.h_on_chip or p.fma or p.gluon or p.produce or p.pieces > 1 or p.split_k
                            or p.gate_split), (hidden, precision, direction, p)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_half_precision(cell):
    """bfloat16 parameters and input (F.layer_norm in bf16 on the CPU), within bf16's tolerance."""
    assert not check(cell, "torch", 3, 7, 5, 37, dtype="bf16")


def test_autocast_returns_its_dtype():
    """Under autocast the loop's norms come out in fp32 (autocast's list); the module returns
    autocast's dtype, as torch.nn's layers do there, with the float32 call's numbers."""
    module = make("lstm", 5, 37)
    x = torch.randn(7, 3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain, _ = module(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, (h_n, c_n) = module(x)
    assert out.dtype == h_n.dtype == c_n.dtype == torch.bfloat16
    assert relative_error(out.float(), plain) <= tolerance("lstm", "bf16")


@needs_interpreter
def test_kernels_under_autocast_return_its_dtype():
    """Without gradients under autocast the kernels run in its dtype (the gains cast to it too), as
    the loop does: the same numbers within bf16's tolerance."""
    module = make("gru", 5, 37, backend="triton")
    x = torch.randn(7, 3, 5)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out, h_n = module(x)
        module.backend = "torch"
        loop, _ = module(x)
    assert out.dtype == h_n.dtype == torch.bfloat16
    assert relative_error(out.float(), loop.float()) <= tolerance("gru", "bf16")


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_packed_sequence_computes_the_padded_call_with_lengths(cell):
    module = make(cell, 4, 37, backend="torch", bidirectional=True)
    seqs = [torch.randn(n, 4) for n in (6, 4, 1)]
    packed_out, packed_h = module(pack_sequence(seqs))
    padded = torch.nn.utils.rnn.pad_sequence(seqs)
    out, h = module(padded, lengths=torch.tensor([6, 4, 1]))
    unpacked, _ = torch.nn.utils.rnn.pad_packed_sequence(packed_out)
    finals = (packed_h, h) if cell == "gru" else (packed_h[1], h[1])
    assert relative_error(unpacked, out) <= 1e-6 and relative_error(*finals) <= 1e-6


def test_reference_normalizes_a_products_scale_away():
    """The float64 reference's own property: each product is normalized before its bias, so scaling
    ``W_ih`` and ``W_hh`` changes nothing (up to the variance's epsilon) -- and does change the
    plain cell, so the check can see the norm missing or placed after the bias."""
    gen = torch.Generator().manual_seed(1)

    def scale(params, ih, hh):
        return {n: p * (ih if n == "weight_ih_l0" else hh if n == "weight_hh_l0" else 1.0) for n, p in params.items()}

    # (products well above the epsilon's reach, then 3 and 5 times those)
    params = scale({n: p.detach().double() for n, p in make("lstm", 5, 16).named_parameters()}, 10.0, 10.0)
    x = torch.randn(6, 2, 5, generator=gen, dtype=torch.float64)
    scaled = scale(params, 3.0, 5.0)
    plain = {n: p for n, p in params.items() if not n.startswith("ln_")}
    plain_scaled = {n: p for n, p in scaled.items() if not n.startswith("ln_")}
    normed = naive_network("lstm", params, x, None, 1)[0]
    assert relative_error(naive_network("lstm", scaled, x, None, 1)[0], normed) < 1e-4
    assert relative_error(naive_network("lstm", plain_scaled, x, None, 1)[0], naive_network("lstm", plain, x, None,
                                                                                            1)[0]) > 0.1
    assert relative_error(naive_network("lstm", plain, x, None, 1)[0], normed) > 0.1


@pytest.mark.parametrize("cell", MODULES)
def test_parameters_by_layer_and_direction(cell):
    """The gains are parameters beside torch.nn's, named like them (``rnnbench.ops.naive``'s
    names): ``[G*H]`` for the products, ``[H]`` for the LSTM's cell norm; ones and zeros to start."""
    module = MODULES[cell][0](4, 6, **MODULES[cell][1], num_layers=2, bidirectional=True, layer_norm=True)
    gates = module.weight_hh_l0.shape[0]
    names = LAYER_NORM_NAMES if cell == "lstm" else LAYER_NORM_NAMES[:2]
    got = {n: p for n, p in module.named_parameters() if n.startswith("ln_")}
    want = {f"{name}_l{k}{sfx}" for name in names for k in (0, 1) for sfx in ("", "_reverse")}
    assert set(got) == want
    for name, p in got.items():
        assert p.shape == ((gates,) if "_ih_" in name or "_hh_" in name else (6,)), name
        assert torch.equal(p, torch.zeros_like(p) if name.startswith("ln_bias") else torch.ones_like(p)), name


def test_reset_parameters_starts_the_gains_again():
    """torch.nn's ``reset_parameters`` draws every parameter the module holds; ours puts the gains
    back to ones and zeros after it, and still draws torch.nn's weights."""
    module = make("lstm", 4, 6)
    weight = module.weight_hh_l0.detach().clone()
    module.reset_parameters()
    assert torch.equal(module.ln_weight_hh_l0, torch.ones(24)) and torch.equal(module.ln_bias_c_l0, torch.zeros(6))
    assert not torch.equal(module.weight_hh_l0, weight)


def test_state_dict_round_trip():
    """Between two layer-normalized modules unchanged; torch.nn's loads with ``strict=False``,
    missing exactly the gains."""
    a, b = make("gru", 4, 6, num_layers=2), rnn.GRU(4, 6, num_layers=2, layer_norm=True)
    b.load_state_dict(a.state_dict())
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    missing = rnn.GRU(4, 6, num_layers=2, layer_norm=True).load_state_dict(torch.nn.GRU(4, 6, num_layers=2)
                                                                          .state_dict(), strict=False).missing_keys
    assert sorted(missing) == sorted(n for n in a.state_dict() if n.startswith("ln_"))


def test_without_layer_norm_there_are_no_gains():
    assert not [n for n, _ in rnn.LSTM(4, 6).named_parameters() if n.startswith("ln_")]
    assert "layer_norm" not in repr(rnn.LSTM(4, 6)) and "layer_norm=True" in repr(make("gru", 4, 6))


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_bad_layer_norm_is_refused(value):
    with pytest.raises(ValueError, match="layer_norm must be True or False"):
        rnn.LSTM(4, 8, layer_norm=value)


def test_layer_norm_with_proj_size_is_refused():
    with pytest.raises(ValueError, match="layer_norm with proj_size"):
        rnn.LSTM(4, 8, proj_size=4, layer_norm=True)


# On a CUDA device: the loop on CUDA tensors, in the dtypes a user trains in.
CUDA_CASES = {
    "lstm-B20-H100-tf32-L2-bidirectional": ("lstm", 20, 100, "tf32", dict(num_layers=2, bidirectional=True)),
    "gru-B20-H100-bf16-lengths": ("gru", 20, 100, "bf16", dict(lengths=torch.arange(20) % 10)),
    "rnn_tanh-B3-H37-fp32": ("rnn_tanh", 3, 37, "fp32", {}),
}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("case", CUDA_CASES)
def test_cuda_loop_against_reference(case):
    cell, batch, hidden, dtype, options = CUDA_CASES[case]
    assert not check(cell, "torch", batch, 9, 24, hidden, device="cuda", dtype=dtype, **options)


# On a CUDA device, without gradients: the kernels' forwards, on chip at the widths they plan for,
# past them on the exchange plans (the statistics gathered across programs).
CUDA_KERNEL_CASES = {
    "lstm-B20-H100-bf16": ("lstm", 20, 100, "bf16", {}),  # 512 rows on chip, 8 warps
    "lstm-B3-H64-tf32-L2-bidirectional-lengths": ("lstm", 3, 64, "tf32", dict(
        num_layers=2, bidirectional=True, lengths=torch.tensor([9, 0, 4]))),
    "lstm-B40-H37-fp32": ("lstm", 40, 37, "fp32", {}),  # 3xTF32, three batch blocks
    "gru-B20-H128-fp16": ("gru", 20, 128, "fp16", {}),
    "gru-B3-H64-tf32-no_bias": ("gru", 3, 64, "tf32", dict(bias=False)),
    "rnn_tanh-B20-H100-fp32": ("rnn_tanh", 20, 100, "fp32", {}),  # the on-chip split (3xFP16)
    "rnn_relu-B20-H256-bf16-no_state": ("rnn_relu", 20, 256, "bf16", dict(with_state=False)),
    "lstm-B32-H650-tf32": ("lstm", 32, 650, "tf32", {}),  # exchange: 41 programs of 16 units, resident
    "lstm-B64-H512-bf16-L2-bidirectional-lengths": ("lstm", 64, 512, "bf16", dict(
        num_layers=2, bidirectional=True, lengths=torch.arange(64) % 10)),
    "lstm-B20-H100-fp32": ("lstm", 20, 100, "fp32", {}),  # exchange, 3xTF32 (strict fp32)
    "gru-B128-H1024-bf16-no_bias": ("gru", 128, 1024, "bf16", dict(bias=False)),  # streamed weights
    "gru-B3-H300-tf32": ("gru", 3, 300, "tf32", {}),
    "rnn_tanh-B32-H650-fp32": ("rnn_tanh", 32, 650, "fp32", {}),
    "rnn_relu-B1-H2048-bf16-no_state": ("rnn_relu", 1, 2048, "bf16", dict(with_state=False)),
}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or _interpreted(), reason="needs a CUDA device, kernels compiled")
@pytest.mark.parametrize("case", CUDA_KERNEL_CASES)
def test_cuda_kernels_without_gradients_against_reference(case):
    cell, batch, hidden, dtype, options = CUDA_KERNEL_CASES[case]
    assert not check(cell, "triton", batch, 9, 24, hidden, device="cuda", dtype=dtype, gradients=False, **options)


# On a CUDA device, with gradients: each cell's saving forward and backward, on chip at the widths
# they plan for, past them on the exchange plans (the backward's sums gathered across programs too).
CUDA_TRAIN_CASES = {
    "lstm-B20-H100-bf16": ("lstm", 20, 100, "bf16", {}),
    "lstm-B3-H64-tf32-L2-bidirectional-lengths": ("lstm", 3, 64, "tf32", dict(
        num_layers=2, bidirectional=True, lengths=torch.tensor([9, 0, 4]))),
    "lstm-B40-H37-fp32": ("lstm", 40, 37, "fp32", {}),  # 3xTF32, three batch blocks
    "lstm-B20-H128-fp16-no_bias": ("lstm", 20, 128, "fp16", dict(bias=False)),
    "gru-B20-H128-bf16": ("gru", 20, 128, "bf16", {}),
    "gru-B3-H64-tf32-L2-bidirectional-lengths": ("gru", 3, 64, "tf32", dict(
        num_layers=2, bidirectional=True, lengths=torch.tensor([9, 0, 4]))),
    "gru-B40-H37-fp32-no_bias": ("gru", 40, 37, "fp32", dict(bias=False)),
    "rnn_tanh-B20-H100-fp32": ("rnn_tanh", 20, 100, "fp32", {}),
    "rnn_tanh-B3-H128-tf32-lengths": ("rnn_tanh", 3, 128, "tf32", dict(lengths=torch.tensor([9, 0, 4]))),
    "rnn_relu-B20-H256-bf16-no_state": ("rnn_relu", 20, 256, "bf16", dict(with_state=False)),
    "lstm-B32-H650-bf16": ("lstm", 32, 650, "bf16", {}),  # exchange plans from here
    "lstm-B20-H100-tf32-L2-bidirectional-lengths": ("lstm", 20, 100, "tf32", dict(
        num_layers=2, bidirectional=True, lengths=torch.arange(20) % 10)),
    "lstm-B20-H100-fp32": ("lstm", 20, 100, "fp32", {}),  # 3xTF32
    "gru-B64-H512-tf32-no_bias": ("gru", 64, 512, "tf32", dict(bias=False)),
    "gru-B3-H300-bf16-lengths": ("gru", 3, 300, "bf16", dict(lengths=torch.tensor([9, 0, 4]))),
    "rnn_tanh-B32-H650-fp32": ("rnn_tanh", 32, 650, "fp32", {}),
    "rnn_relu-B1-H1024-bf16-no_state": ("rnn_relu", 1, 1024, "bf16", dict(with_state=False)),
}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or _interpreted(), reason="needs a CUDA device, kernels compiled")
@pytest.mark.parametrize("case", CUDA_TRAIN_CASES)
def test_cuda_kernels_train_against_reference(case):
    cell, batch, hidden, dtype, options = CUDA_TRAIN_CASES[case]
    assert not check(cell, "triton", batch, 9, 24, hidden, device="cuda", dtype=dtype, **options)


# (cell, batch, hidden, dtype, options): one layer, and a stack (a LayerReplays a layer and direction)
CUDA_REPLAY_CASES = {
    "lstm-B20-H100-bf16": ("lstm", 20, 100, "bf16", {}),
    "gru-B4-H64-tf32-L2-bidirectional": ("gru", 4, 64, "tf32", dict(num_layers=2, bidirectional=True)),
    "rnn_tanh-B20-H100-fp32-no_bias": ("rnn_tanh", 20, 100, "fp32", dict(bias=False)),
    "lstm-B32-H650-bf16-L2": ("lstm", 32, 650, "bf16", dict(num_layers=2)),  # exchange plans
}


def _forward_replays(module) -> list:
    """The forward replays kept for ``module``'s one key: one layer's, or each of a stack's layers'."""
    (_, _, kept), = rnn._REPLAYS[module].values()
    return list(kept) if type(kept) is tuple else [kept]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or _interpreted(), reason="needs a CUDA device, kernels compiled")
@pytest.mark.parametrize("case", CUDA_REPLAY_CASES)
def test_cuda_a_call_without_gradients_is_replayed_with_the_gains_it_holds_now(case):
    """A layer-normalized call without gradients is launches of ours alone (every norm in the
    kernel), so its first call is recorded (each layer's forward replay made) and the next one
    replays it: the replay must be taken, and must read the gains as the module holds them then
    (changed in place between the calls), against float64 on them."""
    cell, batch, hidden, dtype, options = CUDA_REPLAY_CASES[case]
    module = make(cell, 24, hidden, backend="triton", **options).to("cuda", TORCH_DTYPE[dtype])
    assert not check_against_naive(cell, module, batch, 9, 24, device="cuda", dtype=dtype, gradients=False)
    layers = _forward_replays(module)
    assert all(layer.forward is not None for layer in layers), [layer.refused for layer in layers]
    taken = []
    for layer in layers:
        layer.forward = (lambda replay: lambda inputs: taken.append(1) or replay(inputs))(layer.forward)
    with torch.no_grad():
        for name in module._layer_norm_names:
            getattr(module, name).mul_(1.3).add_(0.1)
    assert not check_against_naive(cell, module, batch, 9, 24, device="cuda", dtype=dtype, gradients=False)
    assert len(taken) == len(layers), "the second call did not replay every layer"


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or _interpreted(), reason="needs a CUDA device, kernels compiled")
def test_cuda_training_a_layer_too_wide_for_one_program_stays_on_the_kernels():
    """Past the on-chip widths training runs the exchange plans as the forward does: no fallback
    warning with ``backend="auto"``, against float64."""
    said = check("lstm", "auto", 20, 9, 24, 100, device="cuda", dtype="tf32")
    assert not said, said
