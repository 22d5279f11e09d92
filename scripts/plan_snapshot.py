"""Every answer of ``plans.choose_plan`` over a grid of inputs and overrides, one line each, to
diff before and after a change of the planner: python scripts/plan_snapshot.py OUT [--small]

A refactor of ``choose_plan`` should leave OUT byte for byte the same (run it at both trees, then
``cmp``); a change of a rule should change only the lines it means to. Each line is the call
(batch_size, hidden_size, num_gates, dtype, precision, direction, bounded, device, the override)
and the ``Plan`` it returns or the ``ValueError`` it raises. The CUDA plans are planned for an
H100-sized GPU that need not be present (``multiprocessors`` 132, and 16 for a small one); the
Gluon rules follow the Triton installed (``gluon_common.AVAILABLE``). The full grid is about
280,000 calls (20 s on one core); ``--small`` a few thousand, for tests.

Prints the line count, a short hash of the file and how many calls were refused; exits 2 with one
line on a bad argument.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import sys
from pathlib import Path

import torch

from rnnbench.ops import plans

CUDA, CPU = torch.device("cuda"), torch.device("cpu")
PRECISIONS = ((torch.float32, "ieee"), (torch.float32, "tf32"), (torch.float32, "tf32x3"), (torch.bfloat16, "ieee"),
              (torch.float16, "ieee"))
DIRECTIONS = ("forward", "backward")
# Sizes around every rule's edges: FMA's 128, split-K's 768 and 1024, the gate split's 576, 768 and
# 2048, rows unaligned to 8, batch rows past the multiprocessors.
FULL_BATCHES = (1, 3, 16, 20, 32, 37, 64, 100, 128, 131, 132, 256, 1024, 5000)
FULL_HIDDEN = (1, 3, 16, 33, 37, 64, 65, 100, 128, 129, 256, 500, 512, 576, 640, 650, 704, 768, 1000, 1024, 1040,
               1500, 2048, 2056, 4096)
SMALL_BATCHES, SMALL_HIDDEN = (1, 20, 128), (37, 100, 576, 650, 1024, 1500)


def _overrides() -> tuple[list[dict], list[dict]]:
    """(every override tried alone, the boolean ones among them, which are also tried in pairs)."""
    booleans = [{f.name: v} for f in dataclasses.fields(plans.Plan) if f.type == "bool" for v in (True, False)]
    booleans += [{"gate_split": v} for v in (True, False)]
    sized = [{"block_b": v} for v in (1, 16, 32, 64)] + [{"block_h": v} for v in (4, 16, 32, 64, 128)]
    sized += [{"block_k": v} for v in (16, 32, 64, 128)] + [{"num_warps": v} for v in (4, 8)]
    sized += [{"num_stages": v} for v in (1, 2, 4)] + [{"on_chip_split": v} for v in ("", "tf32", "fp16", "x")]
    one_way = [{prefix + k: v} for prefix in ("forward_", "backward_") for k, v in (
        ("pad_rows", True), ("pad_rows", False), ("split_k", False), ("gate_split", True), ("half_operands", False),
        ("produce", False), ("block_k", 32), ("num_stages", 2), ("gluon", False))]
    return booleans + sized + one_way, booleans


def _answer(*args, **override) -> str:
    try:
        return repr(plans.choose_plan(*args, **override))
    except ValueError as e:
        return f"ValueError: {e}"


def snapshot(small: bool = False) -> list[str]:
    """The lines described above, in a fixed order; ``small``: a few thousand calls."""
    batches, hidden = (SMALL_BATCHES, SMALL_HIDDEN) if small else (FULL_BATCHES, FULL_HIDDEN)
    devices = ((CUDA, 132), (CPU, None)) if small else ((CUDA, 132), (CUDA, 16), (CPU, None))
    lines = []
    for b, h, g, (dtype, precision), d, bounded, (device, mp) in itertools.product(
            batches, hidden, (1, 3, 4), PRECISIONS, DIRECTIONS, (True, False), devices):
        call = (b, h, g, dtype, device, mp, precision, d, bounded)
        lines.append(f"{b} {h} {g} {dtype} {precision} {d} {bounded} {device} {mp} -> {_answer(*call)}")
    alone, booleans = _overrides()
    if small:
        alone, batches, hidden = alone[::3], (20, 128), (100, 650, 1024)
    else:
        batches, hidden = (1, 20, 64, 128), (37, 100, 128, 500, 576, 650, 1024, 1500)
    for override, b, h, g, (dtype, precision), d, (device, mp) in itertools.product(
            alone, batches, hidden, (1, 3, 4), PRECISIONS, DIRECTIONS, ((CUDA, 132), (CPU, None))):
        lines.append(f"{override} {b} {h} {g} {dtype} {precision} {d} {device} -> "
                     f"{_answer(b, h, g, dtype, device, mp, precision, d, True, **override)}")
    pairs = [p for p in itertools.combinations(booleans[::3] if small else booleans, 2) if set(p[0]) != set(p[1])]
    for (a, c), b, h, g, (dtype, precision), d in itertools.product(
            pairs, (20, 128), (100, 650, 1024), (1, 4), PRECISIONS, DIRECTIONS):
        override = {**a, **c}
        lines.append(f"{override} {b} {h} {g} {dtype} {precision} {d} -> "
                     f"{_answer(b, h, g, dtype, CUDA, 132, precision, d, True, **override)}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or (len(argv) == 2 and argv[1] != "--small"):
        print("usage: plan_snapshot.py OUT [--small]", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not out.parent.is_dir() or out.is_dir():
        print(f"plan_snapshot.py: cannot write {out}: {'a directory' if out.is_dir() else 'no such directory'}",
              file=sys.stderr)
        return 2
    lines = snapshot(small=len(argv) == 2)
    text = "\n".join(lines) + "\n"
    try:
        out.write_text(text)
    except OSError as e:
        print(f"plan_snapshot.py: cannot write {out}: {e.strerror}", file=sys.stderr)
        return 2
    refused = sum(" -> ValueError: " in line for line in lines)
    print(f"{len(lines)} calls, {refused} refused, sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
