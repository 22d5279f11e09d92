"""rnnbench.ops.buffers: tensors made by one allocation (each aligned, none overlapping another),
and where the layer uses it: the weights' gradients and the LSTM's saved activations, never a
tensor the caller may keep apart."""

from __future__ import annotations

import pytest
import torch

from rnnbench.ops import buffers


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int8])
def test_together_gives_aligned_disjoint_views_of_one_allocation(dtype):
    shapes = [(3, 37), None, (1,), (5, 1, 7), (0, 4), (129,)]
    got = buffers.together(shapes, dtype, "cpu")
    assert got[1] is None
    tensors = [t for t in got if t is not None]
    assert len({_storage(t) for t in tensors}) == 1
    start = _storage(tensors[0])
    for t, shape in zip(got, shapes):
        if t is None:
            continue
        assert tuple(t.shape) == shape and t.dtype == dtype and t.is_contiguous()
        if t.numel():  # (an empty tensor's address is 0)
            assert (t.data_ptr() - start) % buffers.ALIGN_BYTES == 0
    # Every element belongs to one tensor alone: fill each, then read each back.
    for k, t in enumerate(tensors):
        t.fill_(k + 1)
    for k, t in enumerate(tensors):
        assert bool((t == k + 1).all()), f"tensor {k} overwritten by a later one"


def test_together_apart_when_switched_off(monkeypatch):
    monkeypatch.setattr(buffers, "ENABLED", False)
    got = buffers.together([(2, 3), (4,)], torch.float32, "cpu")
    assert _storage(got[0]) != _storage(got[1])


@pytest.mark.usefixtures("interpreter")
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_a_layers_weight_gradients_share_one_allocation_and_its_outputs_do_not(cell):
    from test_recurrence import make_layer

    from rnnbench.ops.recurrence import recurrent_layer

    x, h0, c0, w_ih, w_hh, b_ih, b_hh = [None if t is None else t.clone().requires_grad_()
                                         for t in make_layer(cell, (3, 7, 5, 37))]
    output, h_n, c_n = recurrent_layer(cell, x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    finals = [h_n] if c_n is None else [h_n, c_n]
    outputs = [output, *finals]
    assert len({_storage(t) for t in outputs}) == len(outputs)
    # The saved activations: the LSTM's gates and cell states in one allocation, apart from h's.
    h_buf, saved, c_buf = output.grad_fn.saved_tensors[3:]
    if cell == "lstm":
        assert _storage(saved) == _storage(c_buf) != _storage(h_buf)
    leaves = [t for t in (x, h0, c0, w_ih, w_hh, b_ih, b_hh) if t is not None]
    grads = torch.autograd.grad([output.sum() + sum(f.sum() for f in finals)], leaves)
    dx, weights = grads[0], grads[-4:]
    assert len({_storage(g) for g in weights}) == 1
    assert all(_storage(g) != _storage(dx) for g in weights)
