"""Tensors that live and die together, made by one allocation.

At the issue's small sizes an eager training step is host time, and allocations are a large part
of it: on the H100's host, taking every allocation of our layer's replayed step from a ring of
tensors made once took 0.82-0.89x the step's time (theano's TF32 LSTM at batch 32, hidden 128:
789 -> 645 µs; ``benchmarks/results/h100/bounds/``), about 12 µs an allocation, where a view of one
costs about 1. One allocation carved into several saves all but one of them.

Only for tensors with one lifetime, since each keeps the whole allocation alive: the weights'
gradients (cuDNN's backward returns them as views of one flat buffer too, torch.nn's flattened
weights), and a layer's saved activations that no caller sees (freed with its graph). Never a
caller's outputs that may be kept apart (``h_n`` kept after ``output`` is dropped would keep the
output's memory), nor tensors an autograd Function returns (several views returned by one
Function may not be modified in place).
"""

from __future__ import annotations

import math

import torch

# Each tensor starts this many bytes past the allocation's start times a whole number: at least
# the 16 bytes the kernels were specialised on (Triton's pointer divisibility), and as aligned as a
# separate allocation of PyTorch's caching allocator (512 bytes) would be for wide loads.
ALIGN_BYTES = 512
# Make them in one allocation (False: one each, as before; for side-by-side measurements).
ENABLED = True


def together(shapes, dtype: torch.dtype, device) -> list[torch.Tensor | None]:
    """One uninitialised contiguous tensor for each of ``shapes`` (None gives None), all of
    ``dtype`` on ``device``, views of one allocation, each starting a multiple of
    :data:`ALIGN_BYTES` past its start and none overlapping another.

    Args:
        shapes: a sequence of shapes (tuples of ints) or None.
    """
    if not ENABLED:
        return [None if s is None else torch.empty(s, dtype=dtype, device=device) for s in shapes]
    step = max(1, ALIGN_BYTES // dtype.itemsize)  # elements between two boundaries
    starts, end = [], 0
    for shape in shapes:
        starts.append(end)
        if shape is not None:
            end += -(-math.prod(shape) // step) * step
    flat = torch.empty(end, dtype=dtype, device=device)
    return [None if shape is None else flat[start:start + math.prod(shape)].view(shape)
            for shape, start in zip(shapes, starts)]
