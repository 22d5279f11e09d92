"""The multi-program kernels on the CPU: the interpreter's programs run side by side in threads
(``concurrent_programs`` in conftest.py), so hidden units split across programs exchange h_t
through memory and wait at the grid barrier as they do on the GPU. Output, final states and every
gradient against the float64 reference; the barrier self-check."""

from __future__ import annotations

import pytest

from rnnbench.precision import tolerance

from test_recurrence import CELLS, check_layer, make_layer

pytestmark = pytest.mark.usefixtures("concurrent_programs")


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("cell", CELLS)
def test_hidden_units_split_across_programs(cell, resident):
    """hidden 37 over 3 programs of 16 units (the last one partly masked), batch 20 over two
    batch blocks: 6 programs, two barrier counters."""
    from rnnbench.ops.recurrence import plan_override

    with plan_override(block_h=16, block_b=16, w_resident=resident, block_k=16):
        check_layer(cell, make_layer(cell, (20, 5, 4, 37)), "fp32", tolerance(cell, "fp32"))


def test_barrier_orders_threads():
    from rnnbench.ops.floor import barrier_check, barrier_floor

    assert barrier_floor(4, 6, "cpu").item() == 24
    assert barrier_check(4, 6, "cpu") == 0
