"""The cached launch (ops/launch.py) is only right for kernels that Triton never specialises on an
integer's value: it refuses any other, and every kernel the recurrence launches through it passes."""

from __future__ import annotations

import inspect

import pytest

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")
tl = pytest.importorskip("triton.language")

from rnnbench.ops import recurrence  # noqa: E402
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
    # a forward and a backward per cell family, and the LSTM's and GRU's split-K backwards
    assert len(launchers) == 2 * len({"lstm", "gru", "rnn"}) + 2
    for launcher in launchers:
        params = inspect.signature(launcher.fn.fn).parameters.values()
        runtime = [p.name for p in params if p.annotation not in (tl.constexpr, "tl.constexpr")]
        args = tuple(torch.zeros(1) if name.endswith("_ptr") else 3 for name in runtime)
        launcher._check_integers(args)  # raises for an integer Triton would specialise


def test_constexprs_are_numbered_by_value():
    """The launch key holds a Constexprs' number: equal values (in any order) must share it and
    different values must not (a number shared by two plans would launch one plan's variant for
    the other's)."""
    from rnnbench.ops.launch import Constexprs

    first, same = Constexprs(dict(H=8, BLOCK_B=16, num_warps=4)), Constexprs(dict(num_warps=4, BLOCK_B=16, H=8))
    other = Constexprs(dict(H=8, BLOCK_B=32, num_warps=4))
    assert first.number == same.number
    assert other.number != first.number


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
