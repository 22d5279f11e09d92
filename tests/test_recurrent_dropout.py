"""Recurrent dropout in rnnbench.nn (``recurrent_dropout=p``): what cuDNN drops, on our kernels.

On the kernels (Triton's interpreter on CPU tensors; CUDA cases marked) and on the loop of torch's
cells (``ops/loop.py``: ``backend="torch"``, CPU tensors): output, final states and every
gradient against the float64 network (``ops/naive.py`` -> ``rnnbench.reference``) run with the
masks the module drew, over odd sizes, with and without states, two layers both ways, batch_first
and variable lengths. Then the masks themselves, evaluation mode and the errors.
"""

from __future__ import annotations

import importlib.util
import warnings

import pytest
import torch

from rnnbench import nn as rnn
from rnnbench.precision import tolerance
from rnnbench.verify import relative_error

from module_check import TORCH_DTYPE, check_against_naive
from test_nn import _interpreted, needs_interpreter

MODULES = {"lstm": (rnn.LSTM, {}), "gru": (rnn.GRU, {}), "rnn_tanh": (rnn.RNN, {"nonlinearity": "tanh"}),
           "rnn_relu": (rnn.RNN, {"nonlinearity": "relu"})}
P = 0.4


@pytest.fixture(autouse=True)
def _interpret_during_test(monkeypatch):
    if _interpreted():
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(rnn, "_WARNED", set())  # (each test sees the fallback's warning once)


def make(cell, input_size, hidden_size, **kwargs):
    module, extra = MODULES[cell]
    torch.manual_seed(0)
    return module(input_size, hidden_size, **extra, recurrent_dropout=P, **kwargs)


def spy_masks(module) -> list:
    """The masks ``module`` draws, in the order it draws them (layer by layer, direction by direction)."""
    drawn = []
    draw = module._recurrent_mask

    def spy(*args):
        drawn.append(draw(*args))
        return drawn[-1]

    module._recurrent_mask = spy
    return drawn


def check(cell, backend, batch, seq, input_size, hidden_size, with_state=True, lengths=None, device="cpu",
          dtype="fp32", **kwargs):
    """The module in training with recurrent dropout against naive_network in float64 with its masks
    (:func:`module_check.check_against_naive`). Returns the warnings the call gave."""
    module = make(cell, input_size, hidden_size, backend=backend, **kwargs).to(device, TORCH_DTYPE[dtype])
    masks = spy_masks(module)
    said = check_against_naive(cell, module, batch, seq, input_size, with_state, lengths, device, dtype, masks)
    assert len(masks) == (2 if module.bidirectional else 1) * module.num_layers
    return said


# (batch, seq, input, hidden, options)
CONFIGS = {
    "B3-T7-I5-H37-L2-bidirectional": (3, 7, 5, 37, dict(num_layers=2, bidirectional=True)),
    "B1-T1-I3-H100-no_state": (1, 1, 3, 100, dict(with_state=False)),
    "B3-T7-I5-H37-batch_first-no_bias": (3, 7, 5, 37, dict(batch_first=True, bias=False)),
    "B3-T7-I5-H37-lengths-bidirectional": (3, 7, 5, 37, dict(bidirectional=True, lengths=torch.tensor([7, 0, 3]))),
}


@needs_interpreter
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("cell", MODULES)
def test_kernels_against_reference(cell, config):
    """Every cell's kernels take recurrent dropout (no fallback, no warning)."""
    batch, seq, input_size, hidden_size, options = CONFIGS[config]
    assert not check(cell, "triton", batch, seq, input_size, hidden_size, **options)


@pytest.mark.parametrize("config", ["B3-T7-I5-H37-L2-bidirectional", "B3-T7-I5-H37-lengths-bidirectional"])
@pytest.mark.parametrize("cell", MODULES)
def test_torch_backend_loop_against_reference(cell, config):
    """``backend="torch"``: the loop of torch's cells (cuDNN has no recurrent dropout)."""
    batch, seq, input_size, hidden_size, options = CONFIGS[config]
    assert not check(cell, "torch", batch, seq, input_size, hidden_size, **options)


@needs_interpreter
@pytest.mark.parametrize("cell", MODULES)
def test_kernels_and_loop_agree_on_one_seed(cell):
    """Both paths draw the same masks from one seed, so they compute the same call."""
    x = torch.randn(5, 3, 4)
    runs = []
    for backend in ("triton", "torch"):
        module = make(cell, 4, 37, backend=backend, num_layers=2)
        torch.manual_seed(3)
        out, _ = module(x)
        runs.append(out)
    assert relative_error(runs[0], runs[1]) <= tolerance(cell, "fp32")


def test_masks_are_fresh_and_scaled():
    """Each layer and direction draws its own mask, again at every call: entries 0 or 1 / (1 - p),
    about a fraction p of them 0."""
    module = make("lstm", 4, 64, num_layers=2, backend="torch")
    masks = spy_masks(module)
    x = torch.randn(3, 256, 4)
    module(x)
    module(x)
    assert len(masks) == 4
    for m in masks:
        assert m.unique().tolist() == [0.0, pytest.approx(1 / (1 - P))]
        assert abs(float((m == 0).float().mean()) - P) < 0.02  # (16,384 draws: 5 standard deviations)
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[0], masks[2])


@pytest.mark.parametrize("backend", ["auto", "torch"])
def test_evaluation_draws_no_mask(backend):
    """In eval mode recurrent dropout is off: no mask, torch.nn's own numbers."""
    module = make("lstm", 4, 37, backend=backend).eval()
    masks = spy_masks(module)
    plain = torch.nn.LSTM(4, 37)
    plain.load_state_dict(module.state_dict())
    x = torch.randn(5, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (auto on CPU without the interpreter: the fallback's warning)
        got = module(x)[0]
    assert not masks
    assert relative_error(got, plain(x)[0]) <= tolerance("lstm", "fp32")


@pytest.mark.parametrize("value", [1, 1.5, -0.1, "0.2", True, False, None])
def test_bad_recurrent_dropout_is_refused(value):
    with pytest.raises(ValueError, match="recurrent_dropout must be a number from 0"):
        rnn.LSTM(4, 8, recurrent_dropout=value)


def test_recurrent_dropout_with_proj_size_is_refused():
    with pytest.raises(ValueError, match="proj_size"):
        rnn.LSTM(4, 8, proj_size=4, recurrent_dropout=0.2)


def test_extra_repr_names_it():
    assert "recurrent_dropout=0.4" in repr(make("gru", 4, 8))
    assert "recurrent_dropout" not in repr(rnn.GRU(4, 8))


@needs_interpreter
def test_layer_refuses_a_wrong_mask():
    from rnnbench.ops.recurrence import recurrent_layer

    x, w_ih, w_hh = torch.randn(3, 2, 4), torch.randn(8, 4), torch.randn(8, 8)
    with pytest.raises(ValueError, match=r"recurrent_mask must be \[2, 8\]"):
        recurrent_layer("rnn_tanh", x, None, None, w_ih, w_hh, recurrent_mask=torch.ones(8, 2))


def test_cpu_without_the_interpreter_falls_back_to_the_loop(monkeypatch):
    """``backend="auto"`` where the kernels cannot run (CPU tensors, not interpreted): the loop,
    after the fallback's one warning, with the reference's numbers."""
    monkeypatch.setattr(rnn, "_interpreted", lambda: False)
    said = check("gru", "auto", 3, 7, 5, 37)
    assert len(said) == 1 and "CPU tensors" in said[0]


# On a CUDA device, the multi-program kernels a recurrent-dropout plan runs (recurrence.DROPOUT_PLAN;
# planned for the H200's 132 multiprocessors): (cell, batch, hidden, dtype, options) -> what it covers.
CUDA_CASES = {
    "lstm-B3-H37-tf32": ("lstm", 3, 37, "tf32", {}),  # exchange, resident; split-K backward
    "lstm-B20-H500-fp32": ("lstm", 20, 500, "fp32", {}),  # 3xTF32 split once, streamed; split-K
    "lstm-B64-H650-bf16": ("lstm", 64, 650, "bf16", {}),  # 16-bit padded rows (split-once level 5)
    "lstm-B32-H1024-tf32": ("lstm", 32, 1024, "tf32", {}),  # streamed forward; gate-split backward
    "lstm-B5-H100-fp16-L2-bidirectional-lengths": ("lstm", 5, 100, "fp16", dict(
        num_layers=2, bidirectional=True, lengths=torch.tensor([9, 0, 4, 9, 1]))),
    "gru-B3-H37-tf32": ("gru", 3, 37, "tf32", {}),  # exchange; split-K backward
    "gru-B20-H500-fp32": ("gru", 20, 500, "fp32", {}),  # 3xTF32 split once
    "gru-B64-H650-bf16": ("gru", 64, 650, "bf16", {}),  # 16-bit padded rows
    "gru-B32-H1024-tf32": ("gru", 32, 1024, "tf32", {}),  # gate-split backward
    "gru-B5-H100-fp16-L2-bidirectional-lengths": ("gru", 5, 100, "fp16", dict(
        num_layers=2, bidirectional=True, lengths=torch.tensor([9, 0, 4, 9, 1]))),
    "rnn_tanh-B3-H37-fp32": ("rnn_tanh", 3, 37, "fp32", {}),  # on chip
    "rnn_relu-B64-H512-tf32": ("rnn_relu", 64, 512, "tf32", {}),  # exchange; streamed backward
    "rnn_tanh-B128-H1024-fp16": ("rnn_tanh", 128, 1024, "fp16", {}),
}


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available() or _interpreted(), reason="needs a CUDA device, kernels compiled")
@pytest.mark.parametrize("case", CUDA_CASES)
def test_cuda_kernels_against_reference(case):
    cell, batch, hidden, dtype, options = CUDA_CASES[case]
    said = check(cell, "triton", batch, 9, 24, hidden, device="cuda", dtype=dtype, **options)
    assert not said


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_dropout_plans_run_only_kernels_that_take_the_mask():
    """recurrence.DROPOUT_PLAN, planned for a GPU of 132 multiprocessors (an H200's) across batch
    1-1024, hidden 37-2048, every cell, fp32 (IEEE, TF32, 3xTF32) and bf16, forward and
    backward: every plan either refused or one whose kernels take ``DROP`` (no FMA, Gluon,
    producers, slices, or operands scaled for ``|h| <= 1``)."""
    from rnnbench.ops.plans import choose_plan, split_once_level
    from rnnbench.ops.recurrence import DROPOUT_PLAN

    cuda = torch.device("cuda")
    planned = refused = 0
    for gates in (4, 3, 1):
        for batch in (1, 3, 20, 64, 256, 1024):
            for hidden in (37, 100, 128, 512, 650, 1024, 2048):
                for dtype, precision in ((torch.float32, "ieee"), (torch.float32, "tf32"),
                                         (torch.float32, "tf32x3"), (torch.bfloat16, "ieee")):
                    for direction in ("forward", "backward"):
                        try:
                            p = choose_plan(batch, hidden, gates, dtype, cuda, multiprocessors=132,
                                            precision=precision, direction=direction, **DROPOUT_PLAN)
                        except ValueError:
                            refused += 1
                            continue
                        planned += 1
                        assert not (p.fma or p.gluon or p.produce or p.pieces > 1 or p.half_operands
                                    or p.split_fp16 or p.on_chip_split or split_once_level(p) in (3, 4)), p
    assert refused <= 2 and planned > 900
