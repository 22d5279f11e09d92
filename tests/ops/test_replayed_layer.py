"""``ops/replayed_layer.py`` on the CPU (interpreted: no direct launch, so no replay is ever
built): the layer through ``ReplayedLayer`` computes what ``RecurrentLayer`` computes, output,
final states and every gradient, and gives up recording after ``ATTEMPTS`` refusals of each
half. The replays themselves run on a GPU: ``test_a_training_step_is_replayed``."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.usefixtures("interpreter")


def _layer(cell: str, batch: int, input_size: int, hidden: int, states: bool, seed: int = 0):
    gates = {"lstm": 4, "gru": 3}.get(cell, 1)
    gen = torch.Generator().manual_seed(seed)
    leaf = lambda *shape: (torch.randn(*shape, generator=gen) * 0.3).requires_grad_(True)  # noqa: E731
    x = leaf(7, batch, input_size)
    h0 = leaf(1, batch, hidden) if states else None
    c0 = leaf(1, batch, hidden) if states and cell == "lstm" else None
    weights = [leaf(gates * hidden, input_size), leaf(gates * hidden, hidden), leaf(gates * hidden),
               leaf(gates * hidden)]
    return x, h0, c0, weights


def _step(outputs, leaves):
    """The outputs and every leaf's gradient of a loss on the output and the final states."""
    outputs = [o for o in outputs if o is not None]
    loss = sum((o * torch.linspace(-1, 1, o.numel()).view(o.shape)).sum() for o in outputs)
    return [o.detach() for o in outputs], torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("states", [True, False], ids=["hx", "no_hx"])
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn_tanh"])
def test_a_replayed_layer_computes_what_the_recurrent_layer_computes(cell, states):
    from rnnbench.ops.recurrence import RecurrentLayer, layer_launch
    from rnnbench.ops.replayed_layer import ATTEMPTS, LayerReplays, ReplayedLayer

    x, h0, c0, weights = _layer(cell, 3, 5, 37, states)
    leaves = [t for t in (x, h0, c0, *weights) if t is not None]
    launch = layer_launch(cell, 3, 37, x.dtype, x.device)
    want = _step(RecurrentLayer.apply(x, h0, c0, *weights, cell, launch, True, None), leaves)
    replays = LayerReplays()
    for _ in range(ATTEMPTS + 1):
        got = _step(ReplayedLayer.apply(x, h0, c0, *weights, cell, launch, replays), leaves)
        for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
            assert torch.equal(g, w)
    assert replays.forward is None and not replays.backwards
    assert replays.refused == {"forward": ATTEMPTS, "backward": ATTEMPTS}


@pytest.mark.parametrize("layer", ["RecurrentLayer", "ReplayedLayer"])
def test_a_backward_unpacks_each_saved_tensor_once(layer):
    """Every read of ``ctx.saved_tensors`` runs the saved-tensor hooks' unpack (under
    ``save_on_cpu``, a copy back to the device, which would also refuse the backward's
    recording): a layer's backward reads them once, and computes under the hooks what it
    computes without them."""
    from rnnbench.ops.recurrence import RecurrentLayer, layer_launch
    from rnnbench.ops.replayed_layer import LayerReplays, ReplayedLayer

    x, h0, c0, weights = _layer("lstm", 3, 5, 37, True)
    leaves = [x, h0, c0, *weights]
    launch = layer_launch("lstm", 3, 37, x.dtype, x.device)
    if layer == "RecurrentLayer":
        call = lambda: RecurrentLayer.apply(x, h0, c0, *weights, "lstm", launch, True, None)  # noqa: E731
    else:
        replays = LayerReplays()
        call = lambda: ReplayedLayer.apply(x, h0, c0, *weights, "lstm", launch, replays)  # noqa: E731
    want = _step(call(), leaves)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t.clone()  # (a copy, as save_on_cpu's is)

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: unpacked.append(t) or t.clone()):
        outputs = call()
    saved = len(packed)
    got = _step(outputs, leaves)
    assert saved == 6 and len(unpacked) == saved, (saved, len(unpacked))
    for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
        assert torch.equal(g, w)
