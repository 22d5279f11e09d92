"""The thing that is timed: one step of a lane on a case's inputs, and its float64 reference.

``forward`` mode runs the network under ``torch.no_grad()`` and returns the output and the final
states. ``train`` mode runs forward and the backward pass from the loss to the input, the initial
states and every weight (``torch.autograd.grad``, which computes what ``loss.backward()`` does
without accumulating into ``.grad``), seeded with the loss's gradient (:func:`loss_gradient`,
one element-wise operation per tensor the loss reads) rather than through the loss's own
operations, which cost more host time than our whole layer at small sizes (:data:`TRAIN_STEP`).

The loss is the squared error against random targets, ``0.5 * Σ (y - target)² / batch_size``, of
the outputs over every step (``all_steps``, the Theano/cuDNN tables) or the last step
(``last_step``, the glample tables), **plus** the same error of the final states ``h_n`` (and
``c_n``). The seeds' losses used the outputs alone; the final-state term costs one element-wise
pass over ``[L, B, H]`` and makes the backward path through the final states (what a language model
or an encoder hands on) part of what every lane must get right. Summing rather than averaging keeps
gradients far from fp16's underflow; the scale does not change the cost.

Every step returns a dict with torch.nn's names (:func:`expected_names`): ``output``, ``h_n``,
``c_n`` (LSTM), and in train mode ``grad_x``, ``grad_h0``, ``grad_c0`` (LSTM) and
``grad_<parameter>`` for every canonical weight (``grad_weight_ih_l0`` ...).

**Variable-length batches** (``case.lengths``): sequence ``b`` is ``inputs.lengths[b]`` steps long
inside a batch padded to ``seq_len``. Only its valid steps count: the loss masks the outputs past
each sequence's end (``last_step`` takes each sequence's own last step), the final states are
those at each sequence's own last step, and verification compares the output at valid positions
only (:func:`valid_only`). A lane that runs the padded batch as if it were full length
(``torch-nn-padded``) cannot give those final states; it returns the output alone, and its
loss and reference leave the final states out (``final_states=False``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from .cases import Case
from .lanes.masking import valid_steps
from .lanes.registry import Lane
from .precision import TORCH_DTYPE
from .reference import canonical_weights, reference_forward
from .timing import RunCounts, sample, time_call, warm_up


# How the torch lanes' timed training step reaches its backward, written into every environment
# record (rnnbench.env) so that runs timed another way are told apart (rnnbench compare warns):
# ``loss-gradient``, seeded with the loss's gradient (:func:`loss_gradient`). Records written
# before it have none: their steps computed the loss itself and differentiated it through autograd.
# (The framework workers' compiled steps differentiate the loss inside the compiled program.)
TRAIN_STEP = "loss-gradient"


@dataclass
class Inputs:
    """Float32 CPU tensors shared by every lane of a case (cast per lane)."""

    weights: dict[str, torch.Tensor]
    x: torch.Tensor  # [T, B, I]
    h0: torch.Tensor  # [L, B, H]
    c0: torch.Tensor  # [L, B, H], LSTM only
    target: torch.Tensor  # [T, B, H] (all_steps) or [B, H] (last_step)
    target_h: torch.Tensor  # [L, B, H], for h_n
    target_c: torch.Tensor  # [L, B, H], for c_n (LSTM only)
    lengths: torch.Tensor | None = None  # [B] int64 for a variable-length case, else None
    _masks: dict = field(default_factory=dict, repr=False, compare=False)  # mask() per device

    @property
    def useful_timesteps(self) -> int:
        """Steps of real data in the batch: the sum of the lengths (B × T when full length)."""
        return int(self.lengths.sum()) if self.lengths is not None else self.x.shape[0] * self.x.shape[1]

    def mask(self, device) -> torch.Tensor | None:
        """``[T, B, 1]`` booleans, True at a sequence's valid steps; None when all are valid.
        Built once per device: the training loss asks for it on every timed step."""
        if self.lengths is None:
            return None
        device = torch.device(device)
        if device not in self._masks:
            self._masks[device] = valid_steps(self.lengths, self.x.shape[0], device)
        return self._masks[device]


def make_inputs(case: Case) -> Inputs:
    """Random weights and inputs for ``case``, seeded from the case's shape so every lane (and a
    resumed run) sees the same draw; distinct cases get distinct draws. A variable-length case
    draws its lengths last, so its sorted and unsorted forms share inputs and lengths (only the
    order of the lengths differs)."""
    shape = (case.cell, case.batch_size, case.seq_len, case.input_size, case.hidden_size, case.num_layers, case.loss)
    if case.lengths:
        shape += (case.lengths,)
    gen = torch.Generator().manual_seed(zlib.crc32(repr(shape).encode()))
    t, b, i, h, layers = case.seq_len, case.batch_size, case.input_size, case.hidden_size, case.num_layers
    target_shape = (t, b, h) if case.loss == "all_steps" else (b, h)
    inputs = Inputs(
        weights=canonical_weights(case, gen),
        x=torch.randn(t, b, i, generator=gen),
        h0=torch.randn(layers, b, h, generator=gen) * 0.5,
        c0=torch.randn(layers, b, h, generator=gen) * 0.5,
        target=torch.randn(target_shape, generator=gen),
        target_h=torch.randn(layers, b, h, generator=gen),
        target_c=torch.randn(layers, b, h, generator=gen),
    )
    if case.lengths:
        low, high = case.length_range
        lengths = torch.randint(low, high + 1, (b,), generator=gen)
        inputs.lengths = lengths.sort(descending=True).values if case.sort_lengths else lengths
    return inputs


def expected_names(case: Case, final_states: bool = True) -> tuple[str, ...]:
    """What a step of ``case`` must return, in canonical (torch.nn) names (without ``h_n`` and
    ``c_n`` for a lane that cannot give them, see the module docstring)."""
    lstm = case.cell == "lstm"
    names = (("output", "h_n", "c_n") if lstm else ("output", "h_n")) if final_states else ("output",)
    if case.mode == "forward":
        return names
    weights = [f"{n}_l{k}" for k in range(case.num_layers) for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    grads = ("grad_x", "grad_h0", "grad_c0") if lstm else ("grad_x", "grad_h0")
    return names + grads + tuple(f"grad_{w}" for w in weights)


def _squared_error(value: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    diff = value.to(torch.promote_types(value.dtype, torch.float32)) - target
    return diff.pow(2).sum()


def loss_of(output: torch.Tensor, finals: tuple[torch.Tensor, ...], inputs: Inputs, loss: str) -> torch.Tensor:
    """The training loss (see module docstring), in float32 at least.

    Args:
        output: ``[T, B, H]``; finals: ``(h_n,)`` or ``(h_n, c_n)``, each ``[L, B, H]``, or
        ``()`` to leave them out; targets from ``inputs`` on the output's device (and its
        ``lengths``, for a variable-length case); ``loss``: ``all_steps`` or ``last_step``.
    """
    if inputs.lengths is None:
        y = output if loss == "all_steps" else output[-1]
        target = inputs.target
    elif loss == "all_steps":  # padded steps count for nothing, whatever the lane put there
        mask = inputs.mask(output.device)
        y, target = output * mask, inputs.target * mask
    else:  # each sequence's own last step
        last = (inputs.lengths - 1).to(output.device, non_blocking=True)
        y, target = output[last, torch.arange(output.shape[1], device=output.device)], inputs.target
    total = _squared_error(y, target)
    for state, target in zip(finals, (inputs.target_h, inputs.target_c)):
        total = total + _squared_error(state, target)
    return 0.5 * total / output.shape[-2]


def loss_gradient(inputs: Inputs, loss: str, batch_size: int) -> Callable:
    """The training loss's gradient with respect to what it reads, for a timed step: a function
    ``seeds(output, finals) -> (tensors, gradients)``, ``torch.autograd.grad(tensors, leaves,
    grad_outputs=gradients)`` then giving every gradient that ``torch.autograd.grad(loss_of(output,
    finals, inputs, loss), leaves)`` gives, without the loss's own operations.

    :func:`loss_of` is ``0.5 · Σ (y − target)² / batch_size`` over each tensor ``y`` it reads (the
    output at every step or at the last, ``h_n``, ``c_n``), so ``∂loss/∂y = (y − target) /
    batch_size``: one element-wise operation per tensor (two for a 16-bit one, computed in float32
    and cast to its dtype, as the loss's backward does; one more for a variable-length batch's mask)
    instead of the loss's dozen or so and their backward, which took 0.24-0.43 ms of host time per
    step on the H100's host, as much as our whole layer's forward (benchmarks/results/h100/train-gap).

    Args:
        inputs: the targets (and lengths) on the step's device (float32), as :func:`loss_of` takes them.
        loss: ``all_steps`` or ``last_step``. batch_size: the output's ``B`` (``[T, B, H]``).
    """
    scale = 1.0 / batch_size
    targets = (inputs.target, inputs.target_h, inputs.target_c)
    # -target / batch_size once per dtype the loss computes in (float32 at least, as loss_of: a
    # float64 lane's in float64): each seed is then one add, -target / batch_size + y * scale.
    negated: dict[torch.dtype, list] = {}
    mask = inputs.mask(inputs.target.device) if loss == "all_steps" else None
    last = None
    if inputs.lengths is not None and loss == "last_step":  # each sequence's own last step
        device = inputs.target.device
        last = ((inputs.lengths - 1).to(device), torch.arange(batch_size, device=device))

    def seeds(output: torch.Tensor, finals: tuple[torch.Tensor, ...]) -> tuple[list, list]:
        if loss == "all_steps":
            y = output
        else:
            y = output[-1] if last is None else output[last]
        tensors = [y, *finals]
        wide = torch.promote_types(y.dtype, torch.float32)
        # (constants to autograd: computed with gradients wanted, each operation would also be
        # recorded in the step's graph, host time a real loss's backward does not spend on them)
        with torch.no_grad():
            if wide not in negated:
                negated[wide] = [None if t is None else t.to(wide) * -scale for t in targets]
            gradients = [torch.add(target, value, alpha=scale) for target, value in zip(negated[wide], tensors)]
            if mask is not None:  # padded steps get no gradient, as the loss's mask gives them
                gradients[0].mul_(mask)
            return tensors, [g.to(v.dtype) for g, v in zip(gradients, tensors)]

    return seeds


def valid_only(outputs: dict[str, torch.Tensor], inputs: Inputs) -> dict[str, torch.Tensor]:
    """``outputs`` with the output zeroed past each sequence's end (where the reference is zero),
    so that only valid positions are compared; unchanged for a full-length case."""
    if inputs.lengths is None or "output" not in outputs:
        return outputs
    output = outputs["output"]
    return {**outputs, "output": output * inputs.mask(output.device)}


def finals_of(cell: str, h_n) -> tuple[torch.Tensor, ...]:
    """torch.nn's ``h_n`` (a tensor, or ``(h, c)`` for LSTM) as a tuple."""
    return tuple(h_n) if cell == "lstm" else (h_n,)


# --------------------------------------------------------------------------------------------
# A lane's step


class Step(Protocol):
    """One lane prepared for one case: the runner calls :meth:`first_call` once, verifies what it
    returned, then :meth:`warm_up` once and :meth:`sample` once per turn; :meth:`close` always.
    Torch lanes use :class:`TorchStep`; lanes of other frameworks answer from their own process."""

    #: Fields added to the result row (e.g. whether a framework took its cuDNN path).
    extra: dict
    #: Whether the step may be timed in turns with other live steps (False: timed alone, as a
    #: step in a worker process is: a worker that dies takes every step it holds with it).
    in_turns: bool

    def first_call(self) -> tuple[dict[str, torch.Tensor], float]:
        """Run once; the named tensors (see :func:`expected_names`) and the call's time in ms."""

    def warm_up(self, budget_s: float, first_call_ms: float) -> RunCounts:
        """The untimed warm-up calls; the timed runs the call gets (:func:`rnnbench.timing.warm_up`)."""

    def sample(self, budget_s: float, runs: RunCounts) -> list[float]:
        """Timed calls, ms each (:func:`rnnbench.timing.sample`)."""

    def close(self) -> None:
        """Free what the step holds."""


@dataclass
class TorchStep:
    """A step made of a torch callable returning tensors in ``names`` order, on ``device``."""

    fn: Callable[[], tuple[torch.Tensor, ...]]
    names: tuple[str, ...]
    device: str
    extra: dict = field(default_factory=dict)
    in_turns: bool = True

    def first_call(self) -> tuple[dict[str, torch.Tensor], float]:
        outputs, ms = time_call(self.fn, self.device)
        return dict(zip(self.names, outputs)), ms

    def warm_up(self, budget_s: float, first_call_ms: float) -> RunCounts:
        return warm_up(self.fn, self.device, budget_s=budget_s, first_call_ms=first_call_ms)[1]

    def sample(self, budget_s: float, runs: RunCounts) -> list[float]:
        return sample(self.fn, self.device, budget_s=budget_s, runs=runs)

    def close(self) -> None:
        self.fn = None


def module_call(module: torch.nn.Module, case: Case, inputs: Inputs, canonical_name=lambda n: n,
                lengths_mode: str | None = None) -> tuple[Callable[[], tuple[torch.Tensor, ...]], tuple[str, ...]]:
    """A callable running one step of a torch.nn-style ``module`` and the names of what it
    returns (weights by ``canonical_name`` of their parameter names).

    ``lengths_mode`` says how the module meets a variable-length batch: ``packed`` (the batch goes
    in as a ``PackedSequence``), ``masked`` (the module takes ``lengths`` as a third argument) or
    ``padded`` (the padded batch goes in as if full length; no final states are returned)."""
    dtype = TORCH_DTYPE[case.dtype]
    lstm = case.cell == "lstm"
    # A copy, never the shared CPU tensor itself: a train step marks its leaves requires_grad.
    move = lambda t: t.detach().to(device=case.device, dtype=dtype, copy=True)  # noqa: E731
    x, h0, c0 = move(inputs.x), move(inputs.h0), move(inputs.c0)
    final_states = not (inputs.lengths is not None and lengths_mode == "padded")
    states = (("h_n", "c_n") if lstm else ("h_n",)) if final_states else ()
    lengths = inputs.lengths
    if lengths is not None and lengths_mode == "masked" and torch.device(case.device).type == "cuda":
        # Pinned: a module copying them to the device does so without waiting, and inside a
        # CUDA graph's capture (triton-graph), where only a copy from pinned memory may be captured.
        lengths = lengths.to(torch.int32).pin_memory()

    def run():
        output, h_n = _call(module, x, (h0, c0) if lstm else h0, lengths, lengths_mode)
        return output, (finals_of(case.cell, h_n) if final_states else ())

    if case.mode == "forward":

        def forward():
            with torch.no_grad():
                output, finals = run()
                return (output, *finals)

        return forward, ("output", *states)

    seeds = loss_gradient(_targets_on(inputs, case.device), case.loss, case.batch_size)
    leaves = [x, h0, c0] if lstm else [x, h0]
    for t in leaves:
        t.requires_grad_(True)
    named = list(module.named_parameters())
    params = [p for _, p in named]

    def train():
        output, finals = run()
        tensors, gradients = seeds(output, finals)  # the loss's gradient, not the loss (loss_gradient)
        grads = torch.autograd.grad(tensors, [*leaves, *params], grad_outputs=gradients)
        return (output.detach(), *(f.detach() for f in finals), *grads)

    grad_names = ("grad_x", "grad_h0", "grad_c0")[: len(leaves)]
    return train, ("output", *states, *grad_names, *(f"grad_{canonical_name(n)}" for n, _ in named))


def _call(module, x, hx, lengths, lengths_mode):
    """``module(x, hx)``, given a variable-length batch the way ``lengths_mode`` says."""
    if lengths is None or lengths_mode == "padded":
        return module(x, hx)
    if lengths_mode == "masked":
        return module(x, hx, lengths)
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
    output, h_n = module(packed, hx)
    return torch.nn.utils.rnn.pad_packed_sequence(output, total_length=x.shape[0])[0], h_n


def _targets_on(inputs: Inputs, device: str) -> Inputs:
    """The loss's tensors on ``device`` once, lengths too: moved inside the timed step, a host
    tensor's copy would wait for the stream there, and the host's work would add to the device's
    instead of overlapping it."""
    lengths = None if inputs.lengths is None else inputs.lengths.to(device)
    return Inputs(inputs.weights, inputs.x, inputs.h0, inputs.c0, inputs.target.to(device),
                  inputs.target_h.to(device), inputs.target_c.to(device), lengths)


def lane_step(lane: Lane, case: Case, inputs: Inputs) -> Step:
    """``lane``'s step for ``case``: the lane's own ``prepare`` if it has one, else its torch
    module (built from the canonical weights), wrapped in a CUDA graph for graph lanes."""
    if lane.prepare is not None:
        return lane.prepare(case, inputs)
    module = lane.module_for(case, inputs.weights)
    fn, names = module_call(module, case, inputs, lane.canonical_name, lane.lengths)
    return TorchStep(graphed(fn) if lane.cuda_graph else fn, names, case.device)


def graphed(step: Callable[[], tuple]) -> Callable[[], tuple]:
    """``step`` captured in a CUDA graph on its first call (after warm-up on a side stream, as
    the torch.cuda.graph documentation requires), replayed on every call after. Inputs are
    static tensors; the returned tensors are the graph's static outputs."""
    state: dict = {}

    def replay():
        if "graph" not in state:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            state["graph"] = torch.cuda.CUDAGraph()
            with torch.cuda.graph(state["graph"]):
                state["outputs"] = step()
        state["graph"].replay()
        return state["outputs"]

    return replay


# --------------------------------------------------------------------------------------------
# The reference


def reference_step(case: Case, inputs: Inputs, final_states: bool = True) -> dict[str, torch.Tensor]:
    """The float64 reference on the case's device, from the inputs and weights *as the lane sees
    them* (rounded to the case's dtype, then widened), so only the lane's arithmetic differs.
    Returns every tensor of :func:`expected_names` (``final_states`` as there), float64, detached."""
    dtype = TORCH_DTYPE[case.dtype]
    train = case.mode == "train"
    widen = lambda t: t.to(dtype).to(device=case.device, dtype=torch.float64)  # noqa: E731
    weights = {n: widen(w).requires_grad_(train) for n, w in inputs.weights.items()}
    lstm = case.cell == "lstm"
    leaves = [widen(t).requires_grad_(train) for t in ((inputs.x, inputs.h0, inputs.c0) if lstm else (inputs.x, inputs.h0))]
    with torch.set_grad_enabled(train):
        lengths = None if inputs.lengths is None else inputs.lengths.to(case.device)
        output, h_n = reference_forward(case.cell, weights, leaves[0], tuple(leaves[1:]) if lstm else leaves[1],
                                        case.num_layers, lengths)
    finals = finals_of(case.cell, h_n) if final_states else ()
    result = {"output": output.detach(), **dict(zip(("h_n", "c_n"), (f.detach() for f in finals)))}
    if not train:
        return result
    targets = Inputs({}, inputs.x, None, None, *(t.to(device=case.device, dtype=torch.float64)
                                                 for t in (inputs.target, inputs.target_h, inputs.target_c)),
                     inputs.lengths)
    grads = torch.autograd.grad(loss_of(output, finals, targets, case.loss), [*leaves, *weights.values()])
    names = ("grad_x", "grad_h0", "grad_c0")[: len(leaves)] + tuple(f"grad_{n}" for n in weights)
    return {**result, **dict(zip(names, grads))}
