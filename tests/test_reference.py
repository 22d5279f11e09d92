"""rnnbench.reference: canonical weights, and the float64 reference checked on its own against
torch.nn (and, for the smallest case, by hand) so that it can serve as the judge of every lane."""

from __future__ import annotations

import math

import pytest
import torch

from rnnbench.cases import CELLS, Case
from rnnbench.lanes.torch_nn import build_torch_nn
from rnnbench.reference import canonical_weights, cell_step, reference_forward

# (batch, seq, input, hidden, layers): odd sizes, including the degenerate ones
SHAPES = [(1, 1, 1, 1, 1), (3, 37, 5, 37, 2), (1, 37, 3, 100, 1), (3, 1, 7, 3, 2)]


def _id(cell, shape):
    b, t, i, h, layers = shape
    return f"{cell}-B{b}-T{t}-I{i}-H{h}-L{layers}"


PARAMS = [pytest.param(cell, shape, id=_id(cell, shape)) for cell in CELLS for shape in SHAPES]


def test_canonical_weights_layout_and_bound():
    case = Case(cell="lstm", input_size=5, hidden_size=7, num_layers=2)
    w = canonical_weights(case, torch.Generator().manual_seed(0))
    assert list(w) == [f"{n}_l{k}" for k in range(2) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    assert w["weight_ih_l0"].shape == (28, 5) and w["weight_ih_l1"].shape == (28, 7)
    assert w["weight_hh_l1"].shape == (28, 7) and w["bias_hh_l1"].shape == (28,)
    assert all(t.dtype == torch.float32 and t.device.type == "cpu" for t in w.values())
    bound = 1 / math.sqrt(7)
    assert all(t.abs().max() <= bound for t in w.values())
    assert max(t.abs().max() for t in w.values()) > 0.9 * bound  # uses the whole range
    # loads into torch.nn as it is: the layout is torch.nn's
    build_torch_nn("lstm", 5, 7, 2).load_state_dict(w, strict=True)


def test_canonical_weights_are_deterministic_per_generator():
    case = Case(cell="gru", input_size=4, hidden_size=6)
    a = canonical_weights(case, torch.Generator().manual_seed(1))
    b = canonical_weights(case, torch.Generator().manual_seed(1))
    c = canonical_weights(case, torch.Generator().manual_seed(2))
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert not torch.equal(a["weight_hh_l0"], c["weight_hh_l0"])


def _torch_nn_double(cell, i, h, layers, weights):
    module = build_torch_nn(cell, i, h, layers).double()
    module.load_state_dict({n: t.double() for n, t in weights.items()}, strict=True)
    return module


@pytest.mark.parametrize("cell, shape", PARAMS)
def test_reference_matches_torch_nn_float64(cell, shape):
    """Output, final state and every gradient of the reference equal torch.nn's in float64."""
    b, t, i, h, layers = shape
    gen = torch.Generator().manual_seed(1234)
    weights = canonical_weights(Case(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h,
                                     num_layers=layers), gen)
    x = torch.randn(t, b, i, generator=gen, dtype=torch.float64)
    h0 = torch.randn(layers, b, h, generator=gen, dtype=torch.float64)
    c0 = torch.randn(layers, b, h, generator=gen, dtype=torch.float64)
    probe = torch.randn(t, b, h, generator=gen, dtype=torch.float64)  # a random loss direction

    module = _torch_nn_double(cell, i, h, layers, weights)
    ref_w = {n: w.double().requires_grad_(True) for n, w in weights.items()}
    x_nn, x_ref = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    hx = (h0, c0) if cell == "lstm" else h0

    out_nn, hn_nn = module(x_nn, hx)
    out_ref, hn_ref = reference_forward(cell, ref_w, x_ref, hx, layers)
    assert out_ref.dtype == torch.float64 and out_ref.shape == (t, b, h)
    torch.testing.assert_close(out_ref, out_nn, rtol=1e-10, atol=1e-12)
    if cell == "lstm":
        assert isinstance(hn_ref, tuple) and hn_ref[0].shape == hn_ref[1].shape == (layers, b, h)
        torch.testing.assert_close(hn_ref[0], hn_nn[0], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(hn_ref[1], hn_nn[1], rtol=1e-10, atol=1e-12)
    else:
        assert hn_ref.shape == (layers, b, h)
        torch.testing.assert_close(hn_ref, hn_nn, rtol=1e-10, atol=1e-12)
    # the last layer's final hidden state is the last output step
    last = hn_ref[0][-1] if cell == "lstm" else hn_ref[-1]
    torch.testing.assert_close(last, out_ref[-1], rtol=0, atol=0)

    params_nn = dict(module.named_parameters())
    g_nn = torch.autograd.grad((out_nn * probe).sum(), [x_nn, *(params_nn[n] for n in ref_w)])
    g_ref = torch.autograd.grad((out_ref * probe).sum(), [x_ref, *ref_w.values()])
    for name, a, e in zip(["x", *ref_w], g_ref, g_nn):
        torch.testing.assert_close(a, e, rtol=1e-9, atol=1e-12, msg=f"grad {name}")


def test_reference_by_hand_rnn_tanh_and_relu_one_unit():
    """H = I = B = 1, T = 2: h_t = act(w_ih x_t + b_ih + w_hh h_{t-1} + b_hh), written out."""
    f64 = dict(dtype=torch.float64)
    w = {"weight_ih_l0": torch.tensor([[0.5]], **f64), "weight_hh_l0": torch.tensor([[-0.25]], **f64),
         "bias_ih_l0": torch.tensor([0.1], **f64), "bias_hh_l0": torch.tensor([-0.3], **f64)}
    x = torch.tensor([[[2.0]], [[-1.0]]], dtype=torch.float64)
    h0 = torch.tensor([[[0.4]]], dtype=torch.float64)
    for cell, act in (("rnn_tanh", math.tanh), ("rnn_relu", lambda v: max(v, 0.0))):
        h1 = act(0.5 * 2.0 + 0.1 - 0.25 * 0.4 - 0.3)
        h2 = act(0.5 * -1.0 + 0.1 - 0.25 * h1 - 0.3)
        out, hn = reference_forward(cell, w, x, h0, 1)
        assert out.flatten().tolist() == pytest.approx([h1, h2], abs=1e-15)
        assert hn.flatten().tolist() == pytest.approx([h2], abs=1e-15)


def test_reference_gru_resets_after_the_recurrent_matmul():
    """n = tanh(W_in x + b_in + r * (W_hn h + b_hn)): with r = sigmoid(-inf) = 0 the recurrent
    bias b_hn vanishes from n (it would not if r multiplied h before the matmul)."""
    h = 2
    w_ih = torch.zeros(3 * h, 1, dtype=torch.float64)
    w_hh = torch.zeros(3 * h, h, dtype=torch.float64)
    b_ih = torch.zeros(3 * h, dtype=torch.float64)
    b_hh = torch.zeros(3 * h, dtype=torch.float64)
    b_ih[:h] = -1e9  # r = 0
    b_hh[2 * h:] = 5.0  # b_hn
    state = torch.full((1, h), 0.5, dtype=torch.float64)
    new = cell_step("gru", torch.zeros(1, 1, dtype=torch.float64), state, w_ih, w_hh, b_ih, b_hh)
    # z = sigmoid(0) = 0.5, n = tanh(0) = 0 -> h' = 0.5 * 0 + 0.5 * 0.5
    torch.testing.assert_close(new, torch.full((1, h), 0.25, dtype=torch.float64))


def test_reference_lstm_gate_order_i_f_g_o():
    """Only the forget gate open (f = 1) and the input gate shut (i = 0): c' = c, h' = o * tanh(c)."""
    h = 3
    w_ih = torch.zeros(4 * h, 1, dtype=torch.float64)
    w_hh = torch.zeros(4 * h, h, dtype=torch.float64)
    b = torch.zeros(4 * h, dtype=torch.float64)
    b[:h] = -1e9  # i
    b[h:2 * h] = 1e9  # f
    b[2 * h:3 * h] = 3.0  # g (ignored because i = 0)
    b[3 * h:] = 0.0  # o = 0.5
    c = torch.tensor([[0.1, -0.2, 0.3]], dtype=torch.float64)
    h_new, c_new = cell_step("lstm", torch.zeros(1, 1, dtype=torch.float64), (torch.zeros(1, h, dtype=torch.float64), c),
                             w_ih, w_hh, b, torch.zeros_like(b))
    torch.testing.assert_close(c_new, c)
    torch.testing.assert_close(h_new, 0.5 * torch.tanh(c))
