"""rnnbench.ops.split_products (interpreted, on CPU tensors): the split into fp16 high parts and
remainders under each line's power of two, as stored and transposed, and the product from split
operands against float64, on odd sizes, on whole tiles of both tilings and on rows whose
magnitudes lie far apart. (The interpreter multiplies the fp16 parts in fp32; the tensor cores'
accumulation on the GPU is the CUDA tests'.)"""

from __future__ import annotations

import math

import pytest
import torch

from rnnbench.verify import relative_error

pytestmark = pytest.mark.usefixtures("interpreter", "unwritten_is_nan")


@pytest.fixture
def unwritten_is_nan(monkeypatch):
    """Every float tensor ``torch.empty`` makes starts as NaN (fresh CPU memory is often zeros,
    which would hide padding or parts a kernel failed to write)."""
    real = torch.empty

    def empty(*args, **kwargs):
        t = real(*args, **kwargs)
        return t.fill_(math.nan) if t.is_floating_point() else t

    monkeypatch.setattr(torch, "empty", empty)


def _spread(rows: int, cols: int, seed: int) -> torch.Tensor:
    """Normal values, each row and each column under its own power of two between 2^-30 and 2^30
    (so that a line's scale and its elements' magnitudes both vary)."""
    gen = torch.Generator().manual_seed(seed)
    row_exp = torch.randint(-15, 16, (rows, 1), generator=gen)
    col_exp = torch.randint(-15, 16, (1, cols), generator=gen)
    return torch.randn(rows, cols, generator=gen) * torch.exp2((row_exp + col_exp).float())


@pytest.mark.parametrize("transpose", [False, True], ids=["as-stored", "transposed"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 37), (100, 5), (65, 130), (37, 600)])
def test_split_rebuilds_each_line_under_its_power_of_two(shape, transpose):
    """``(hi + lo) * scale`` is each line (of the operand as stored, or of its transpose) to 2^-23
    of each element, or 2^-25 of its scale below fp16's normal range; each scale is a power of two
    bringing the line's largest ``|x|`` into ``[2^14, 2^15]``. 600 columns: more than one span of
    ``line_max_kernel``."""
    from rnnbench.ops.split_products import TILES, split

    x = _spread(*shape, seed=0)
    parts = split(x, transpose)
    want = (x.t() if transpose else x).double()
    lines, width = want.shape
    assert (parts.lines, parts.width) == (lines, width)
    padded = (-(-lines // TILES.bm) * TILES.bm, -(-width // TILES.bk) * TILES.bk)
    assert parts.hi.shape == parts.lo.shape == padded and parts.scale.shape == (padded[0],)
    assert parts.hi.dtype == parts.lo.dtype == torch.float16 and parts.scale.dtype == torch.float32
    assert parts.hi.is_contiguous() and parts.lo.is_contiguous()
    for pad in (parts.hi[lines:], parts.hi[:, width:], parts.lo[lines:], parts.lo[:, width:]):
        assert not pad.any()  # (a product reads the padding)
    mantissa, _ = torch.frexp(parts.scale)
    assert (mantissa == 0.5).all()
    hi, lo, scale = parts.hi[:lines, :width].double(), parts.lo[:lines, :width].double(), parts.scale[:lines]
    biggest = hi.abs().amax(dim=1)
    assert ((biggest >= 2.0 ** 14) & (biggest <= 2.0 ** 15)).all()
    s = scale.double()[:, None]
    error = ((hi + lo) * s - want).abs()
    assert (error <= want.abs() * 2.0 ** -23 + s * 2.0 ** -25).all()


def test_split_keeps_infinities_and_zero_lines():
    """An infinite element stays infinite (its remainder 0, not inf - inf); a line of zeros splits
    into zeros under a finite scale."""
    from rnnbench.ops.split_products import split

    x = torch.ones(3, 4)
    x[0, 1] = -math.inf
    x[2] = 0.0
    parts = split(x)
    hi, lo, scale = parts.hi, parts.lo, parts.scale
    assert hi[0, 1].item() == -math.inf and lo[0, 1].item() == 0.0
    assert torch.isfinite(scale).all() and (hi[2] == 0).all() and (lo[2] == 0).all()
    assert torch.equal((hi[1, :4].double() + lo[1, :4].double()) * scale[1].double(), x[1].double())


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (37, 3, 100), (100, 37, 5), (3, 200, 130),
                                     (128, 256, 128), (64, 128, 64)],
                         ids=["one", "odd", "short-k", "wide", "whole", "half-tile"])
def test_product_matches_float64(m, n, k):
    """``A @ B^T`` from the split operands: partial tiles at every edge, whole tiles (their store
    unmasked) and a tile of which half is padding; each element within 1e-5 of ``|A| |B|^T`` (the
    bound of a sum's rounding) on rows and columns of far apart magnitudes, and normal operands
    within 1e-6 of float64 as a whole."""
    from rnnbench.ops import split_products as sp

    a, b = _spread(m, k, seed=1), _spread(n, k, seed=2)
    got = sp.product(sp.split(a), sp.split(b))
    assert got.shape == (m, n) and got.dtype == torch.float32 and got.is_contiguous()
    bound = a.double().abs() @ b.double().abs().t()
    assert ((got.double() - sp.reference_product(a, b)).abs() <= 1e-5 * bound).all()
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(m, k, generator=gen), torch.randn(n, k, generator=gen)
    assert relative_error(sp.product(sp.split(a), sp.split(b)), sp.reference_product(a, b)) <= 1e-6


def test_product_of_an_infinite_row_is_not_finite():
    """A row of ``A`` holding +inf gives no finite element (+inf, or NaN where a remainder of ``B``
    is 0: ``inf * 0``; torch's product gives +inf against these positive rows of ``B``); the
    other rows stay finite and close."""
    from rnnbench.ops import split_products as sp

    gen = torch.Generator().manual_seed(4)
    a, b = torch.randn(5, 9, generator=gen), torch.rand(4, 9, generator=gen) + 0.5
    a[2, 3] = math.inf
    got = sp.product(sp.split(a), sp.split(b))
    assert not torch.isfinite(got[2]).any()
    rest = [0, 1, 3, 4]
    assert relative_error(got[rest], sp.reference_product(a[rest], b)) <= 1e-6


def test_product_of_unequal_reductions_is_refused():
    from rnnbench.ops import split_products as sp

    with pytest.raises(ValueError, match="reductions differ"):
        sp.product(sp.split(torch.ones(3, 4)), sp.split(torch.ones(2, 5)))


@pytest.mark.parametrize("m, n, k", [(3, 2, 0), (0, 2, 5)], ids=["no-reduction", "no-rows"])
def test_product_of_empty_operands(m, n, k):
    """A product over nothing is zeros; one of no rows is empty."""
    from rnnbench.ops import split_products as sp

    got = sp.product(sp.split(torch.randn(m, k)), sp.split(torch.randn(n, k)))
    assert got.shape == (m, n) and torch.equal(got, torch.zeros(m, n))


def test_operands_split_together_are_each_split_alone():
    """``split_all`` lays several operands (as stored and transposed, odd and whole sizes, one
    with no lines and one with no width) into shared buffers: each one's parts and scales are
    bit for bit its split alone, and nothing of one lands in another's."""
    from rnnbench.ops import split_products as sp

    operands = [(_spread(37, 130, seed=5), False), (_spread(300, 3, seed=6), True), (torch.randn(0, 5), False),
                (_spread(128, 64, seed=7), True), (torch.randn(4, 0), False), (_spread(1, 700, seed=8), False)]
    together = sp.split_all(operands)
    for (x, transpose), got in zip(operands, together):
        alone = sp.split(x, transpose)
        assert (got.lines, got.width, got.padded) == (alone.lines, alone.width, alone.padded)
        if got.width:
            assert torch.equal(got.hi, alone.hi) and torch.equal(got.lo, alone.lo)
            assert torch.equal(got.scale[:got.lines], alone.scale[:alone.lines])


def test_line_sums_come_with_the_split():
    """``split_all`` gives each line's sum of the operands asked (``(x, transpose, True)``: a bias
    gradient, from the loads that find the lines' maxima), as stored and transposed, over one span
    of ``line_max_kernel`` and several (1,100 rows transposed: three), and zeros over no width;
    against float64 to fp32's rounding. The parts are still each operand's split alone, bit for
    bit, and the operands not asked have no sums."""
    from rnnbench.ops import split_products as sp

    operands = [(torch.randn(1100, 37), True, True), (_spread(37, 130, seed=5), False),
                (torch.randn(3, 600), False, True), (torch.randn(0, 5), True, True), (torch.randn(128, 64), True, True),
                (torch.randn(9, 0), False, True)]
    together = sp.split_all(operands)
    for (x, transpose, *asked), got in zip(operands, together):
        alone = sp.split(x, transpose)
        if got.width:
            assert torch.equal(got.hi, alone.hi) and torch.equal(got.lo, alone.lo)
            assert torch.equal(got.scale[:got.lines], alone.scale[:alone.lines])
        if not asked:
            assert got.sums is None
            continue
        want = (x.t() if transpose else x).double().sum(1)
        assert got.sums.shape == (got.lines,) and got.sums.dtype == torch.float32
        assert (got.sums.double() - want).abs().max() <= 1e-6 * (1 + want.abs().max())


def test_products_made_together_match_float64():
    """``products`` makes up to three products in one launch, whole tiles (their stores unmasked)
    beside partial ones, from operands of one split call, and from ``a``s of one call and ``b``s of
    another (neither the first of its call), beside a product over nothing."""
    from rnnbench.ops import split_products as sp

    gen = torch.Generator().manual_seed(9)
    d, x, w = (torch.randn(*shape, generator=gen) for shape in ((256, 128), (256, 37), (128, 5)))
    d_rows, d_t, x_t, w_t = sp.split_all([(d, False), (d, True), (x, True), (w, True)])
    got = sp.products([(d_rows, w_t), (d_t, x_t), (d_t, d_t)])
    want = [d.double() @ w.double(), d.double().t() @ x.double(), d.double().t() @ d.double()]
    for value, ref in zip(got, want):
        assert value.shape == ref.shape and value.is_contiguous()
        assert relative_error(value, ref) <= 1e-6
    # a's of one call and b's of another, past each call's first operand, beside a product over nothing
    a0, a1, b0, b1 = (torch.randn(r, 50, generator=gen) for r in (3, 130, 200, 37))
    a_parts = sp.split_all([(a0, False), (a1, False), (torch.randn(5, 0), False)])
    b_parts = sp.split_all([(b0, False), (b1, False), (torch.randn(3, 0), False)])
    got = sp.products([(a_parts[1], b_parts[1]), (a_parts[2], b_parts[2]), (a_parts[0], b_parts[0])])
    assert relative_error(got[0], sp.reference_product(a1, b1)) <= 1e-6
    assert torch.equal(got[1], torch.zeros(5, 3))
    assert relative_error(got[2], sp.reference_product(a0, b0)) <= 1e-6


def test_calls_past_their_counts_or_across_splits_are_refused():
    from rnnbench.ops import split_products as sp

    x = torch.ones(3, 4)
    with pytest.raises(ValueError, match="operands to split"):
        sp.split_all([(x, False)] * (sp.MAX_OPERANDS + 1))
    with pytest.raises(ValueError, match="operands to split"):
        sp.split_all([])
    a, b = sp.split_all([(x, False), (x, False)])
    with pytest.raises(ValueError, match="products"):
        sp.products([(a, b)] * (sp.MAX_PRODUCTS + 1))
    with pytest.raises(ValueError, match="several splits"):
        sp.products([(a, b), (sp.split(x), b)])
    with pytest.raises(ValueError, match="several splits"):
        sp.products([(a, b), (a, sp.split(x))])


def test_an_operand_too_large_for_32_bit_offsets_is_refused():
    """An operand whose parts would reach 2^31 elements, as stored or transposed (the kernels'
    offsets inside one operand are 32-bit), does not ``fit``; split, it is refused before
    anything is allocated."""
    from rnnbench.ops import split_products as sp

    assert sp.fits(2 ** 16 - 128, 2 ** 15) and not sp.fits(2 ** 16, 2 ** 15)
    # (as stored 2^16 x (2^15 - 64) elements; transposed, its lines pad to 2^15: 2^31)
    assert not sp.fits(2 ** 16, 2 ** 15 - 64)
    with pytest.raises(ValueError, match="too large to split"):
        sp.split_all([(torch.ones(1, 1).expand(2 ** 16, 2 ** 15), False)])  # (one element, seen as 2^31)
