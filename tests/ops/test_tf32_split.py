"""``ops.common._split_tf32``, the split of an fp32 operand into a TF32 high part and a remainder
behind strict fp32's products (``Plan.split_once``), on CPU tensors under Triton's interpreter."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.usefixtures("interpreter")
tl = pytest.importorskip("triton.language")

from rnnbench.ops.common import _split_tf32  # noqa: E402


def _split(x_ptr, hi_ptr, lo_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    hi, lo = _split_tf32(tl.load(x_ptr + o))
    tl.store(hi_ptr + o, hi)
    tl.store(lo_ptr + o, lo)


def test_split_is_exact_and_rounds_to_nearest():
    """``hi + lo == x`` bit for bit, ``hi`` with TF32's 10 mantissa bits (the low 13 zero), ``lo``
    at most half a TF32 step (2^-11 of ``x``: rounded, where cutting would allow twice that, and
    some beyond 2^-12, so not all tiny), infinities kept whole (``lo`` 0, not NaN)."""
    import triton

    split = triton.jit(_split)  # under the interpreter (the fixture set TRITON_INTERPRET=1)
    gen = torch.Generator().manual_seed(0)
    scale = 10.0 ** torch.randint(-8, 8, (1021,), generator=gen)
    x = torch.cat([torch.randn(1021, generator=gen) * scale, torch.tensor([float("inf"), -float("inf"), 0.0])])
    hi, lo = torch.empty_like(x), torch.empty_like(x)
    split[(1,)](x, hi, lo, 1024)
    assert torch.equal(hi + lo, x)
    assert not (hi.view(torch.int32) & 0x1FFF).any()
    finite = x.isfinite() & (x != 0)
    assert (lo[finite].abs() <= x[finite].abs() * 2.0 ** -11).all()
    assert (lo[finite].abs() > x[finite].abs() * 2.0 ** -12).any()
    assert hi[-3:].tolist() == [float("inf"), -float("inf"), 0.0] and lo[-3:].tolist() == [0.0, 0.0, 0.0]
