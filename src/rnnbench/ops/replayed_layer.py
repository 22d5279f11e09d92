"""A layer's training step replayed: its forward that saves for the backward, and that backward,
each recorded once through the normal path and replayed afterwards (``ops/replay.py``).

At the seed suites' small sizes an eager training step is host time, on both sides: on the H100's
host, theano's TF32 LSTM (batch 32, hidden 128) took 149 µs for our layer's forward with gradients
wanted and 374 for its backward, against cuDNN's 111 and 630, out of whole steps of 0.8-1.2 ms
(``benchmarks/results/h100/call-floor/lean-b2cfa73/profile.txt``; the steps also ``lean-7de6361``'s). Most of ours is the Python of
every call: plans, buffers, the gradient kernels' tiling, arguments. :class:`ReplayedLayer` is
:class:`~rnnbench.ops.recurrence.RecurrentLayer` with each half replayed where a recording of it
stands: the forward for the caller's key (``rnnbench.nn`` checks shapes, dtypes, devices,
settings and weights, as for the forward replay), the backward per what it is asked (which
inputs want gradients, which outputs brought one) and bound to the stream its barrier counters
belong to. Where no replay stands (the first call, another stream, a recording refused), the
normal path runs, recorded when it may be. :func:`run_layer` runs one layer and direction of a
stacked module so (``rnnbench.nn``: several layers, or both directions), a ``LayerReplays`` each.
"""

from __future__ import annotations

import torch

from . import replay
from .recurrence import RecurrentLayer, _layer_forward, saves_for_backward
from .recurrence import run_layer as _run_layer

# Recordings of one half that may be refused before it is given up: a refusal may pass (a
# counters buffer grown inside the recording, a fill), and the second then records cleanly.
ATTEMPTS = 2


class LayerReplays:
    """The replays of one layer for one key: its saving forward and its backwards, by what each
    backward is asked; ``refused`` counts the recordings that gave none."""

    __slots__ = ("forward", "backwards", "refused")

    def __init__(self):
        self.forward: replay.Replay | None = None
        self.backwards: dict[tuple, replay.Replay] = {}
        self.refused: dict[str, int] = {}

    def may_record(self, half: str) -> bool:
        """Whether ``half`` (``forward``, ``backward``) may be recorded again."""
        return self.refused.get(half, 0) < ATTEMPTS

    def record(self, half: str, recorded: replay.Recording, inputs: tuple, outputs: tuple) -> replay.Replay | None:
        """The replay of what ``recorded`` saw, or None (counted against ``half``)."""
        found = replay.Replay.build(recorded, inputs, outputs)
        if found is None:
            self.refused[half] = self.refused.get(half, 0) + 1
        return found


def forward_through(replays: LayerReplays, inputs: tuple, cell: str, launch, save: bool, norm=None) -> tuple:
    """``_layer_forward``'s six results for ``inputs`` (``x, h0, c0, w_ih, w_hh, b_ih, b_hh``,
    no lengths; ``save``: whether it saves for a backward; ``norm``: layer norm's
    ``LayerNormWeights``, not saving, whose tensors the replay takes after ``inputs``) by
    ``replays.forward`` where that stands, else by the normal path, recorded the first time it may
    be (a refused recording counted against the forward)."""
    tensors = inputs if norm is None else (*inputs, *norm)
    got = None if replays.forward is None else replays.forward(tensors)
    if got is not None:
        return got
    if replays.forward is None and replays.may_record("forward") and replay.can_replay():
        with replay.recording(inputs[0].device) as records:
            got = _layer_forward(*inputs, cell, launch, save, None, None, norm)
        replays.forward = replays.record("forward", records, tensors, got)
        return got
    return _layer_forward(*inputs, cell, launch, save, None, None, norm)


def run_layer(replays: LayerReplays, cell: str, x, h0, c0, w_ih, w_hh, b_ih, b_hh, launch, norm=None) -> tuple:
    """``recurrence.run_layer`` (no lengths, no autocast) for one layer and direction of a stack,
    through ``replays`` (kept for this layer, its module's call key, and whether gradients are
    enabled: ``rnnbench.nn``, whose key checked the weights: contiguous and 16-byte aligned):
    ``(output [T, B, H], h_n [1, B, H], c_n or None)``. The layer's own tensors must be contiguous
    and aligned too for a replay to stand in (a layer's input is the layer below's output, a view
    one plane into its hidden states, aligned only where ``B * H`` elements are a multiple of 16
    bytes; the states are views of the module's): otherwise, and with gradients enabled but none
    wanted (the key does not say which layers want them), the normal path, unrecorded. Under
    no_grad the forward replayed (:func:`forward_through`, not saving); with gradients wanted,
    :class:`ReplayedLayer`. ``norm``: layer norm's ``LayerNormWeights`` (its forward alone: with a
    gradient wanted, the normal path's error)."""
    inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    if not replay.aligned((x, h0, c0)) or (norm is not None and saves_for_backward(*inputs, *norm)):
        return _run_layer(cell, *inputs, launch, None, None, norm)
    if norm is not None:
        return forward_through(replays, inputs, cell, launch, False, norm)[:3]
    if not torch.is_grad_enabled():
        return forward_through(replays, inputs, cell, launch, False)[:3]
    if saves_for_backward(*inputs):
        return ReplayedLayer.apply(*inputs, cell, launch, replays)
    return _run_layer(cell, *inputs, launch)


class ReplayedLayer(torch.autograd.Function):
    """``RecurrentLayer`` (one layer, one direction, no lengths, gradients saved) through
    ``replays`` (a :class:`LayerReplays`). ``ReplayedLayer.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh,
    cell, launch, replays)``: the arguments and returns of ``RecurrentLayer`` (``save`` true,
    ``lengths`` None)."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, cell, launch, replays):
        out, h_n, c_n, h_buf, saved, c_buf = forward_through(replays, (x, h0, c0, w_ih, w_hh, b_ih, b_hh), cell,
                                                             launch, True)
        RecurrentLayer.keep_for_backward(ctx, x, h0, c0, w_ih, w_hh, b_ih, cell, launch, None, h_buf, saved, c_buf)
        ctx.replays = replays
        return out, h_n, c_n

    @staticmethod
    def backward(ctx, d_out, d_h_n, d_c_n):
        return (*_backward(ctx, d_out, d_h_n, d_c_n), None, None, None)


def _backward(ctx, d_out, d_h_n, d_c_n) -> tuple:
    """The seven gradients of ``RecurrentLayer``'s tensor inputs, replayed where a recording of
    this backward stands: for the gradients asked and brought, and the saved tensors' dtypes (a
    saved-tensor hook may hand back others); every tensor contiguous and 16-byte aligned, as the
    recording's were; no autocast (the normal path disables it). Strided gradients (a bidirectional
    layer's half of its stack's output gradient, ``torch.cat``'s backward) are made contiguous first,
    as the normal path makes them inside, so that the rest replays."""
    grads = (d_out, d_h_n, d_c_n)
    saved = ctx.saved_tensors  # (once: a saved-tensor hook's unpack, a copy, would refuse a recording)
    inputs = (*grads, *saved)
    if not replay.aligned(inputs):
        grads = tuple([None if g is None else g.contiguous() for g in grads])
        inputs = (*grads, *saved)
    if torch.is_autocast_enabled(saved[0].device.type) or not replay.aligned(inputs):
        return RecurrentLayer.gradients(ctx, saved, *grads)[:7]
    replays = ctx.replays
    need = ctx.needs_input_grad[:7]
    asked = (need, d_out is None, d_h_n is None, d_c_n is None, *[None if t is None else t.dtype for t in saved])
    found = replays.backwards.get(asked)
    if found is not None:
        got = found(inputs)
        if got is not None:
            return got
    elif replays.may_record("backward") and replay.can_replay():
        with replay.recording(saved[0].device) as records:
            got = RecurrentLayer.gradients(ctx, saved, *grads)[:7]
        recorded = replays.record("backward", records, inputs, got)
        if recorded is not None:
            replays.backwards[asked] = recorded
        return got
    return RecurrentLayer.gradients(ctx, saved, *grads)[:7]
