"""``rnnbench lm --lane triton`` trains the model that ``--lane torch-nn`` trains.

From one seed, both lanes start from the same weights (rnnbench.nn's modules subclass torch.nn's,
so their constructor should draw the same numbers: checked here, not assumed), take the same
per-step losses and end with the same parameters, to float32 rounding. On the CPU the kernels run
under Triton's interpreter (see tests/conftest.py), so the model is tiny (hidden 16, embedding 16,
batch 4, bptt 5, 2 layers, 3 steps); on a GPU (``pytest -m cuda``) the same check runs with bf16
autocast and a looser tolerance.

The optimiser is plain SGD: Adam divides each gradient by its own running scale, so a gradient
that is zero up to rounding (and of either sign) moves a weight by a whole learning rate, and the
parameters could then differ far beyond what the gradients do. Under SGD a parameter's difference
is the learning rate times its gradient's.
"""

from __future__ import annotations

import sys

import pytest
import torch

from rnnbench.lanes import LANES
from rnnbench.lm.data import get_batch, load_corpus, window_starts
from rnnbench.lm.loop import train_step
from rnnbench.lm.run import prepare
from rnnbench.precision import TOLERANCE
from rnnbench.verify import compare

STEPS = 3


def _interpreted() -> bool:
    common = sys.modules.get("rnnbench.ops.common")
    return common is not None and common.INTERPRET


@pytest.fixture
def triton_on_cpu(monkeypatch):
    """The triton lane offered on the CPU, as ``TRITON_INTERPRET=1 rnnbench lm`` offers it (the
    registered lane was made without the variable); skip where the kernels were compiled for a GPU."""
    pytest.importorskip("triton")
    if not _interpreted():
        pytest.skip("the kernels were compiled for the GPU in this process; run this test with "
                    "TRITON_INTERPRET=1 in a process of its own")
    from rnnbench.lanes.triton import make_lane

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setitem(LANES, "triton", make_lane())


def _train(config, corpus, steps: int = STEPS):
    """``(initial state_dict, per-step losses, final state_dict)`` of ``steps`` optimiser steps,
    through the lm's own preparation (seeded model, optimiser) and training step."""
    setup = prepare(config, corpus)
    initial = {k: v.detach().clone() for k, v in setup.model.state_dict().items()}
    assert type(setup.model.rnn).__module__.startswith(
        "rnnbench.nn" if config.lane == "triton" else "torch.nn"), type(setup.model.rnn)
    hidden = setup.model.init_hidden(config.batch_size)
    losses = []
    for start in window_starts(setup.data["train"], config.bptt)[:steps]:
        x, y = get_batch(setup.data["train"], start, config.bptt)
        loss, hidden = train_step(setup.model, setup.optimizer, setup.scaler, x, y, hidden, config, setup.device)
        losses.append(loss.item())
    return initial, losses, {k: v.detach().clone() for k, v in setup.model.state_dict().items()}


def _compare_lanes(config, corpus, loss_rtol: float, update_tolerance: float) -> None:
    """Train ``config`` with each lane from the same seed; the same initial weights exactly, the
    per-step losses within ``loss_rtol``, and each parameter's update (final − initial) within
    ``update_tolerance`` of torch-nn's by norm-wise relative error (the benchmark's own measure,
    :func:`rnnbench.verify.compare`). Updates, not parameters: an update is 1e-4 to 1e-1 of a
    weight here, so a tolerance on the weights themselves would hide a wrong gradient."""
    start_nn, losses_nn, end_nn = _train(config.override(lane="torch-nn"), corpus)
    start_tr, losses_tr, end_tr = _train(config.override(lane="triton"), corpus)
    assert list(start_tr) == list(start_nn)  # torch.nn's parameter names, in the same order
    for name in start_nn:
        assert torch.equal(start_tr[name], start_nn[name]), f"{name}: the same seed drew other weights"
    assert len(losses_tr) == len(losses_nn) == STEPS
    assert losses_tr == pytest.approx(losses_nn, rel=loss_rtol)
    updates_nn = {name: end_nn[name] - start_nn[name] for name in start_nn}
    updates_tr = {name: end_tr[name] - start_tr[name] for name in start_nn}
    assert all(u.abs().max() > 0 for u in updates_nn.values())  # every parameter was trained
    verdict = compare(updates_tr, updates_nn, update_tolerance)
    assert verdict.ok, verdict.message


@pytest.fixture
def small_model(tiny):
    """``small_model(rnn, **changes)``: 2 layers, hidden and embedding 16, batch 4, bptt 5, SGD."""
    def make(rnn: str, **changes):
        return tiny(rnn=rnn, num_layers=2, hidden_size=16, emb_size=16, batch_size=4, bptt=5,
                    optimizer="sgd", lr=1.0, max_steps=STEPS, **changes)
    return make


@pytest.mark.usefixtures("triton_on_cpu")
@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_triton_lane_trains_as_torch_nn_on_cpu(word_dir, small_model, rnn):
    # float32 rounding: the losses differ by a few units in the last place at most, the updates
    # by far less than the benchmark's fp32 tolerance against float64
    _compare_lanes(small_model(rnn), load_corpus(word_dir), loss_rtol=1e-5, update_tolerance=TOLERANCE["fp32"])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_triton_lane_trains_as_torch_nn_on_cuda_bf16(word_dir, small_model, rnn):
    """bf16 autocast: both lanes round the recurrence to 8 mantissa bits (2^-8 = 0.4 %) in their own
    order (cuDNN against our kernels). Each may be off the exact result by up to the benchmark's bf16
    tolerance, so the two may differ by twice it; the losses, means over the window, far less."""
    config = small_model(rnn, device="cuda", amp="bf16")
    _compare_lanes(config, load_corpus(word_dir), loss_rtol=2e-2, update_tolerance=2 * TOLERANCE["bf16"])
