"""Is a lane computing the same function? Compare its step against the float64 reference.

The measure is the relative error ``‖lane − ref‖ / ‖ref‖`` per tensor (output, input gradient,
every weight gradient), with a per-dtype tolerance (:data:`rnnbench.precision.TOLERANCE`).
A lane that fails is reported as ``mismatch`` and its time is never shown as a result.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Verdict:
    ok: bool
    max_rel_error: float
    worst: str  # name of the tensor with the largest error
    message: str


def relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    """‖value − reference‖ / ‖reference‖ in float64; inf on a shape mismatch, NaN stays NaN."""
    if value.shape != reference.shape:
        return float("inf")
    diff = value.detach().to(torch.float64) - reference.detach().to(torch.float64)
    denom = reference.detach().to(torch.float64).norm().item()
    return diff.norm().item() / (denom if denom > 0 else 1.0)


def compare(outputs: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], tolerance: float) -> Verdict:
    """Check every reference tensor has a counterpart within ``tolerance``.

    A missing tensor, a shape mismatch or a NaN fails.
    """
    missing = sorted(set(reference) - set(outputs))
    if missing:
        return Verdict(False, float("inf"), missing[0], f"lane returned no {missing[0]}")
    errors = {name: relative_error(outputs[name], ref) for name, ref in reference.items()}
    worst = max(errors, key=lambda n: (errors[n] != errors[n], errors[n]))  # NaN ranks worst
    err = errors[worst]
    ok = err == err and err <= tolerance  # err == err is False for NaN
    message = "" if ok else f"{worst} relative error {err:.3g} > tolerance {tolerance:g}"
    return Verdict(ok, err, worst, message)
