"""rnnbench.workload: inputs, loss, the timed step and the reference step."""

from __future__ import annotations

import pytest
import torch

from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.workload import lane_step, loss_of, make_inputs, reference_step

CASE = Case(cell="lstm", batch_size=3, seq_len=5, input_size=4, hidden_size=6, num_layers=2)


def test_make_inputs_shapes():
    inp = make_inputs(CASE)
    assert inp.x.shape == (5, 3, 4) and inp.h0.shape == inp.c0.shape == (2, 3, 6)
    assert inp.target.shape == (5, 3, 6)
    assert make_inputs(CASE.replace(loss="last_step")).target.shape == (3, 6)
    assert all(t.dtype == torch.float32 for t in (inp.x, inp.h0, inp.c0, inp.target, *inp.weights.values()))


def test_make_inputs_same_draw_for_mode_device_dtype_distinct_across_shapes():
    a, b = make_inputs(CASE), make_inputs(CASE.replace(mode="forward", device="cuda", dtype="bf16"))
    assert torch.equal(a.x, b.x) and torch.equal(a.weights["weight_hh_l1"], b.weights["weight_hh_l1"])
    c = make_inputs(CASE.replace(batch_size=4))
    assert not torch.equal(a.weights["weight_hh_l0"], c.weights["weight_hh_l0"])
    assert not torch.equal(a.x[:, :3], c.x[:, :3])
    d = make_inputs(CASE.replace(loss="last_step"))
    assert not torch.equal(a.weights["weight_hh_l0"], d.weights["weight_hh_l0"])


def test_loss_of_all_and_last_step():
    out = torch.arange(12.0).view(2, 3, 2)  # [T=2, B=3, H=2]
    target_all = torch.zeros(2, 3, 2)
    assert loss_of(out, target_all, "all_steps").item() == pytest.approx(0.5 * (out ** 2).sum().item() / 3)
    target_last = torch.ones(3, 2)
    assert loss_of(out, target_last, "last_step").item() == pytest.approx(0.5 * ((out[-1] - 1) ** 2).sum().item() / 3)
    half = loss_of(out.half(), target_all, "all_steps")
    assert half.dtype == torch.float32  # computed in float32 at least


@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop", "torch-fused-loop"])
def test_tensor_names_are_canonical(lane):
    step, names = lane_step(LANES[lane], CASE, make_inputs(CASE))
    expected = {"output", "grad_x", *(f"grad_{n}" for n in make_inputs(CASE).weights)}
    assert set(names) == expected and len(names) == len(expected)
    outputs = step()
    assert len(outputs) == len(names)
    assert dict(zip(names, outputs))["grad_x"].shape == (5, 3, 4)
    fwd = CASE.replace(mode="forward")
    step, names = lane_step(LANES[lane], fwd, make_inputs(fwd))
    assert names == ("output",)
    (out,) = step()
    assert out.shape == (5, 3, 6) and not out.requires_grad


def test_train_step_does_not_accumulate_grad():
    step, names = lane_step(LANES["torch-nn"], CASE, make_inputs(CASE))
    first = step()
    second = step()
    for name, a, b in zip(names, first, second):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


def test_reference_step_names_and_dtype():
    ref = reference_step(CASE, make_inputs(CASE))
    _, names = lane_step(LANES["torch-nn"], CASE, make_inputs(CASE))
    assert set(ref) == set(names)
    assert all(t.dtype == torch.float64 and not t.requires_grad for t in ref.values())
    assert set(reference_step(CASE.replace(mode="forward"), make_inputs(CASE))) == {"output"}


def test_reference_step_sees_weights_rounded_to_the_case_dtype():
    bf = CASE.replace(dtype="bf16", mode="forward")
    inp = make_inputs(bf)
    rounded = {n: w.to(torch.bfloat16).double() for n, w in inp.weights.items()}
    from rnnbench.reference import reference_forward

    x = inp.x.to(torch.bfloat16).double()
    hx = (inp.h0.to(torch.bfloat16).double(), inp.c0.to(torch.bfloat16).double())
    expected, _ = reference_forward("lstm", rounded, x, hx, 2)
    torch.testing.assert_close(reference_step(bf, inp)["output"], expected, rtol=0, atol=0)
