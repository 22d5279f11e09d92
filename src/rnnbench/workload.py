"""The thing that is timed: one step of a lane's module on a case's inputs.

``forward`` mode runs the module under ``torch.no_grad()``. ``train`` mode runs forward, the
loss, and the backward pass to the input and every weight (``torch.autograd.grad``, which
computes what ``loss.backward()`` does without accumulating into ``.grad``). The loss is the
squared error of the outputs against a random target, ``0.5 * Σ (y - target)² / batch_size``,
over every step (``all_steps``, the Theano/cuDNN tables) or the last step (``last_step``, the
glample tables). Summing rather than averaging keeps gradients far from fp16's underflow; the
scale does not change the cost.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import torch

from .cases import Case
from .lanes.registry import Lane
from .precision import TORCH_DTYPE
from .reference import canonical_weights, reference_forward

# Names of the compared tensors, in the order a step returns them.
FORWARD_NAMES = ("output",)


@dataclass
class Inputs:
    """Float32 CPU tensors shared by every lane of a case (cast per lane)."""

    weights: dict[str, torch.Tensor]
    x: torch.Tensor  # [T, B, I]
    h0: torch.Tensor  # [L, B, H]
    c0: torch.Tensor  # [L, B, H], LSTM only
    target: torch.Tensor  # [T, B, H] (all_steps) or [B, H] (last_step)


def make_inputs(case: Case) -> Inputs:
    """Random weights and inputs for ``case``, seeded from the case's shape so every lane (and a
    resumed run) sees the same draw; distinct cases get distinct draws."""
    shape = (case.cell, case.batch_size, case.seq_len, case.input_size, case.hidden_size, case.num_layers, case.loss)
    gen = torch.Generator().manual_seed(zlib.crc32(repr(shape).encode()))
    t, b, i, h, layers = case.seq_len, case.batch_size, case.input_size, case.hidden_size, case.num_layers
    target_shape = (t, b, h) if case.loss == "all_steps" else (b, h)
    return Inputs(
        weights=canonical_weights(case, gen),
        x=torch.randn(t, b, i, generator=gen),
        h0=torch.randn(layers, b, h, generator=gen) * 0.5,
        c0=torch.randn(layers, b, h, generator=gen) * 0.5,
        target=torch.randn(target_shape, generator=gen),
    )


def loss_of(output: torch.Tensor, target: torch.Tensor, loss: str) -> torch.Tensor:
    """Squared error per example (see module docstring); computed in float32 at least."""
    y = output if loss == "all_steps" else output[-1]
    diff = y.to(torch.promote_types(y.dtype, torch.float32)) - target
    return 0.5 * diff.pow(2).sum() / y.shape[-2]


def step_fn(module: torch.nn.Module, case: Case, x, hx, target) -> Callable[[], tuple[torch.Tensor, ...]]:
    """A callable running one step; returns ``(output,)`` or ``(output, grad_x, *grad_weights)``
    with weights in ``module.named_parameters()`` order."""
    params = [p for _, p in module.named_parameters()]
    if case.mode == "forward":

        def forward():
            with torch.no_grad():
                return (module(x, hx)[0],)

        return forward

    x.requires_grad_(True)

    def train():
        output = module(x, hx)[0]
        grads = torch.autograd.grad(loss_of(output, target, case.loss), [x, *params])
        return (output.detach(), *grads)

    return train


def tensor_names(lane: Lane, module: torch.nn.Module, case: Case) -> tuple[str, ...]:
    """Names of what a step returns, matching :func:`step_fn`; weights by canonical name."""
    if case.mode == "forward":
        return FORWARD_NAMES
    return ("output", "grad_x", *(f"grad_{lane.canonical_name(n)}" for n, _ in module.named_parameters()))


def lane_step(lane: Lane, case: Case, inputs: Inputs):
    """Build ``lane``'s module for ``case`` and return ``(step, names)``; the step is wrapped in
    a CUDA graph (captured at its first call) for graph lanes."""
    dtype = TORCH_DTYPE[case.dtype]
    module = lane.module_for(case, inputs.weights)
    move = lambda t: t.to(device=case.device, dtype=dtype)  # noqa: E731
    hx = (move(inputs.h0), move(inputs.c0)) if case.cell == "lstm" else move(inputs.h0)
    target = inputs.target.to(case.device)  # the loss is computed in float32
    step = step_fn(module, case, move(inputs.x), hx, target)
    return (graphed(step) if lane.cuda_graph else step), tensor_names(lane, module, case)


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


def reference_step(case: Case, inputs: Inputs) -> dict[str, torch.Tensor]:
    """The float64 reference on the case's device, from the inputs and weights *as the lane sees
    them* (rounded to the case's dtype, then widened), so only the lane's arithmetic differs.
    Returns tensors named as :func:`tensor_names` names them (torch.nn parameter names)."""
    dtype = TORCH_DTYPE[case.dtype]
    widen = lambda t: t.to(dtype).to(device=case.device, dtype=torch.float64)  # noqa: E731
    weights = {n: widen(w).requires_grad_(case.mode == "train") for n, w in inputs.weights.items()}
    x = widen(inputs.x).requires_grad_(case.mode == "train")
    hx = (widen(inputs.h0), widen(inputs.c0)) if case.cell == "lstm" else widen(inputs.h0)
    with torch.set_grad_enabled(case.mode == "train"):
        output, _ = reference_forward(case.cell, weights, x, hx, case.num_layers)
    if case.mode == "forward":
        return {"output": output}
    target = inputs.target.to(device=case.device, dtype=torch.float64)
    grads = torch.autograd.grad(loss_of(output, target, case.loss), [x, *weights.values()])
    return {"output": output.detach(), "grad_x": grads[0],
            **{f"grad_{n}": g for n, g in zip(weights, grads[1:])}}
