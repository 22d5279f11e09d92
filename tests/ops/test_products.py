"""rnnbench.ops.products.even: the rule that sends a product down the tile's unmasked path. The
path itself is checked against float64 in test_projection.py and test_gradients.py."""

from __future__ import annotations

import pytest

from rnnbench.ops.products import Tiles, even

TILES = Tiles(32, 64, 16)


@pytest.mark.parametrize("m, n, k, strides, expected", [
    ((64, 128, 48, (48, 128), True)),
    ((48, 128, 48, (48, 128), False)),   # a partial row of tiles
    ((64, 100, 48, (48, 100), False)),   # a partial column of tiles
    ((64, 128, 40, (48, 128), False)),   # a partial chunk of the reduction
    ((64, 128, 48, (40, 128), False)),   # a row that starts off a 16-element boundary
    ((64, 128, 48, (48, 136), False)),
])
def test_even_needs_whole_tiles_and_rows_on_16_elements(m, n, k, strides, expected):
    assert even(TILES, m, n, k, *strides) is expected


def test_tiles_can_refuse_the_even_path():
    assert even(TILES, 64, 128, 48, 48) and not even(Tiles(32, 64, 16, even=False), 64, 128, 48, 48)
