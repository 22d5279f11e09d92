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
