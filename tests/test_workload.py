"""rnnbench.workload: inputs, loss, the timed step and the reference step."""

from __future__ import annotations

import pytest
import torch

from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.workload import Inputs, expected_names, lane_step, loss_gradient, loss_of, make_inputs, reference_step

CASE = Case(cell="lstm", batch_size=3, seq_len=5, input_size=4, hidden_size=6, num_layers=2)


def test_make_inputs_shapes():
    inp = make_inputs(CASE)
    assert inp.x.shape == (5, 3, 4) and inp.h0.shape == inp.c0.shape == (2, 3, 6)
    assert inp.target.shape == (5, 3, 6) and inp.target_h.shape == inp.target_c.shape == (2, 3, 6)
    assert make_inputs(CASE.replace(loss="last_step")).target.shape == (3, 6)
    assert all(t.dtype == torch.float32 for t in (inp.x, inp.h0, inp.c0, inp.target, inp.target_h,
                                                  inp.target_c, *inp.weights.values()))


def test_make_inputs_same_draw_for_mode_device_dtype_distinct_across_shapes():
    a, b = make_inputs(CASE), make_inputs(CASE.replace(mode="forward", device="cuda", dtype="bf16"))
    assert torch.equal(a.x, b.x) and torch.equal(a.weights["weight_hh_l1"], b.weights["weight_hh_l1"])
    c = make_inputs(CASE.replace(batch_size=4))
    assert not torch.equal(a.weights["weight_hh_l0"], c.weights["weight_hh_l0"])
    assert not torch.equal(a.x[:, :3], c.x[:, :3])
    d = make_inputs(CASE.replace(loss="last_step"))
    assert not torch.equal(a.weights["weight_hh_l0"], d.weights["weight_hh_l0"])


def _targets(target, target_h, target_c=None):
    return Inputs({}, None, None, None, target, target_h, target_c)


def test_loss_of_all_and_last_step_and_final_states():
    out = torch.arange(12.0).view(2, 3, 2)  # [T=2, B=3, H=2]
    h_n, c_n = torch.full((1, 3, 2), 2.0), torch.full((1, 3, 2), -1.0)
    zeros = torch.zeros(1, 3, 2)
    outputs_all = 0.5 * (out ** 2).sum().item() / 3
    assert loss_of(out, (h_n,), _targets(torch.zeros(2, 3, 2), zeros), "all_steps").item() == \
        pytest.approx(outputs_all + 0.5 * 4 * 6 / 3)
    last = 0.5 * ((out[-1] - 1) ** 2).sum().item() / 3
    assert loss_of(out, (h_n, c_n), _targets(torch.ones(3, 2), h_n, zeros), "last_step").item() == \
        pytest.approx(last + 0.5 * 1 * 6 / 3)  # h_n on target: only c_n's error adds
    half = loss_of(out.half(), (h_n.half(),), _targets(torch.zeros(2, 3, 2), zeros), "all_steps")
    assert half.dtype == torch.float32  # computed in float32 at least


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("finals", [0, 1, 2])
@pytest.mark.parametrize("lengths", [None, [3, 1, 4, 4, 0]])
@pytest.mark.parametrize("loss", ["all_steps", "last_step"])
def test_the_loss_gradient_seeds_the_backward_as_the_loss_does(loss, lengths, finals, dtype):
    """The timed step's backward from loss_gradient's seeds gives what autograd gives through
    loss_of itself: every loss, with and without lengths (a sequence of length 0 too), with the
    output alone or with one or two final states, in float64 and in bf16 (computed in float32, cast)."""
    T, B, H = 4, 5, 3
    gen = torch.Generator().manual_seed(0)
    leaf = torch.randn(T + 2, B, H, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.randn((T, B, H) if loss == "all_steps" else (B, H), generator=gen)
    states = torch.randn(2, 1, B, H, generator=gen)
    inputs = Inputs({}, torch.zeros(T, B, 2), None, None, target, states[0], states[1],
                    None if lengths is None else torch.tensor(lengths))

    def forward():  # every tensor the loss reads depends on the leaf, each differently
        values = (leaf * torch.arange(1.0, T + 3, dtype=torch.float64).view(-1, 1, 1)).tanh().to(dtype)
        return values[:T], tuple(values[T + k:T + k + 1] for k in range(finals))

    output, states_n = forward()
    expected, = torch.autograd.grad(loss_of(output, states_n, inputs, loss), leaf)
    output, states_n = forward()
    tensors, gradients = loss_gradient(inputs, loss, B)(output, states_n)
    assert [g.dtype for g in gradients] == [dtype] * (1 + finals)
    assert not any(g.requires_grad for g in gradients), "a seed is in the step's graph"
    got, = torch.autograd.grad(tensors, leaf, grad_outputs=gradients)
    tolerance = dict(rtol=1e-12, atol=1e-15) if dtype == torch.float64 else dict(rtol=1e-2, atol=1e-3)
    torch.testing.assert_close(got, expected, **tolerance)


def test_expected_names():
    weights = [f"grad_{n}" for n in make_inputs(CASE).weights]
    assert expected_names(CASE) == ("output", "h_n", "c_n", "grad_x", "grad_h0", "grad_c0", *weights)
    assert expected_names(CASE.replace(mode="forward")) == ("output", "h_n", "c_n")
    gru = CASE.replace(cell="gru")
    assert expected_names(gru)[:4] == ("output", "h_n", "grad_x", "grad_h0")
    assert len(expected_names(gru)) == 4 + len(weights)


@pytest.mark.parametrize("lane", ["torch-nn", "torch-cell-loop", "torch-fused-loop"])
@pytest.mark.parametrize("cell", ["lstm", "rnn_tanh"])
def test_steps_return_the_expected_names_and_shapes(lane, cell):
    case = CASE.replace(cell=cell)
    outputs, ms = lane_step(LANES[lane], case, make_inputs(case)).first_call()
    assert tuple(outputs) == expected_names(case) and ms > 0
    assert outputs["grad_x"].shape == (5, 3, 4) and outputs["grad_h0"].shape == outputs["h_n"].shape == (2, 3, 6)
    fwd = case.replace(mode="forward")
    outputs, _ = lane_step(LANES[lane], fwd, make_inputs(fwd)).first_call()
    assert tuple(outputs) == expected_names(fwd)
    assert outputs["output"].shape == (5, 3, 6) and not outputs["output"].requires_grad


def test_train_step_does_not_accumulate_grad_or_touch_the_shared_inputs():
    inputs = make_inputs(CASE)
    step = lane_step(LANES["torch-nn"], CASE, inputs)
    first, _ = step.first_call()
    second, _ = step.first_call()
    for name in first:
        torch.testing.assert_close(first[name], second[name], rtol=0, atol=0, msg=name)
    assert not any(t.requires_grad for t in (inputs.x, inputs.h0, inputs.c0))


def test_reference_step_names_and_dtype():
    ref = reference_step(CASE, make_inputs(CASE))
    assert tuple(ref) == expected_names(CASE)
    assert all(t.dtype == torch.float64 and not t.requires_grad for t in ref.values())
    assert tuple(reference_step(CASE.replace(mode="forward"), make_inputs(CASE))) == ("output", "h_n", "c_n")


def test_reference_step_sees_weights_rounded_to_the_case_dtype():
    bf = CASE.replace(dtype="bf16", mode="forward")
    inp = make_inputs(bf)
    rounded = {n: w.to(torch.bfloat16).double() for n, w in inp.weights.items()}
    from rnnbench.reference import reference_forward

    x = inp.x.to(torch.bfloat16).double()
    hx = (inp.h0.to(torch.bfloat16).double(), inp.c0.to(torch.bfloat16).double())
    expected, _ = reference_forward("lstm", rounded, x, hx, 2)
    torch.testing.assert_close(reference_step(bf, inp)["output"], expected, rtol=0, atol=0)
