"""rnnbench.ops.split_products (interpreted, on CPU tensors): the split into TF32's high part and
its remainder, as stored and transposed, and the product from split operands against float64, on
odd sizes and on whole tiles of both tilings. (The interpreter multiplies the TF32 parts in fp32;
TF32's rounding on the GPU is the CUDA tests'.)"""

from __future__ import annotations

import pytest
import torch

from rnnbench.verify import relative_error

pytestmark = pytest.mark.usefixtures("interpreter")


@pytest.mark.parametrize("transpose", [False, True], ids=["as-stored", "transposed"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 37), (100, 5), (65, 130)])
def test_split_is_exact_with_a_tf32_high_part(shape, transpose):
    """``hi + lo`` is the operand exactly (transposed where asked), ``hi`` has no bits past TF32's
    10 of mantissa, and ``lo`` is at most half of ``hi``'s last bit."""
    from rnnbench.ops.split_products import split

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen) * torch.logspace(-20, 20, shape[1])
    hi, lo = split(x, transpose)
    want = x.t() if transpose else x
    assert hi.shape == lo.shape == want.shape and hi.is_contiguous() and lo.is_contiguous()
    assert torch.equal(hi + lo, want)
    assert not (hi.view(torch.int32) & 0x1FFF).any()
    assert (lo.abs() <= hi.abs() * 2.0 ** -11).all()


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (37, 3, 100), (100, 37, 5), (3, 200, 130),
                                     (128, 128, 64), (64, 128, 32)],
                         ids=["one", "odd", "short-k", "wide", "whole-128", "whole-64"])
def test_product_matches_float64(m, n, k):
    """``A @ B^T`` from the split operands: partial tiles at every edge, and whole tiles of each
    tiling (128x128 and the narrow 64x128), which take the unmasked path."""
    from rnnbench.ops import split_products as sp
    from rnnbench.ops.products import even

    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(m, k, generator=gen), torch.randn(n, k, generator=gen)
    if (m, n) == (128, 128):
        assert even(sp.TILES, m, n, k, k)
    if (m, n) == (64, 128):
        assert not even(sp.TILES, m, n, k, k) and even(sp.NARROW_TILES, m, n, k, k)
    got = sp.product(sp.split(a), sp.split(b))
    assert got.shape == (m, n) and got.dtype == torch.float32 and got.is_contiguous()
    assert relative_error(got, sp.reference_product(a, b)) <= 1e-6


def test_product_of_unequal_reductions_is_refused():
    from rnnbench.ops import split_products as sp

    with pytest.raises(ValueError, match="reductions differ"):
        sp.product(sp.split(torch.ones(3, 4)), sp.split(torch.ones(2, 5)))
