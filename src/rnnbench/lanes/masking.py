"""Masking for per-step loops on a variable-length batch (padded to the longest sequence).

A sequence that has ended keeps its state, so the final state is the one at its own last step,
and outputs zeros, as ``pad_packed_sequence`` does; the float64 reference does the same
(:func:`rnnbench.reference.reference_forward`).
"""

from __future__ import annotations

import torch


def valid_steps(lengths: torch.Tensor, seq_len: int, device) -> torch.Tensor:
    """``[T, B, 1]`` booleans on ``device``, True where step ``t`` is inside sequence ``b``
    (``t < lengths[b]``); built where ``lengths`` lie."""
    steps = torch.arange(seq_len, device=lengths.device).unsqueeze(1) < lengths.unsqueeze(0)  # [T, B]
    # non_blocking: a host tensor's plain copy waits for the stream, a sync inside the timed step
    return steps.unsqueeze(2).to(device, non_blocking=True)


def running_masks(lengths: torch.Tensor | None, seq_len: int, device) -> list[torch.Tensor | None]:
    """Per step ``t``, a ``[B, 1]`` boolean mask of the sequences still running (None for all)."""
    if lengths is None:
        return [None] * seq_len
    return list(valid_steps(lengths, seq_len, device).unbind(0))


def keep_finished(new, old, running: torch.Tensor | None):
    """The new state where a sequence is running, the old one where it has ended; ``new``/``old``
    are a tensor ``[B, H]`` or a tuple of them (LSTM's ``(h, c)``)."""
    if running is None:
        return new
    if isinstance(new, tuple):
        return tuple(torch.where(running, n, o) for n, o in zip(new, old))
    return torch.where(running, new, old)


def zero_finished(output: torch.Tensor, running: torch.Tensor | None) -> torch.Tensor:
    """``output`` ``[B, H]`` with the rows of ended sequences set to zero."""
    return output if running is None else output * running
