"""The sliced 16-bit forward that saves for the backward, and the backward reading its gates,
compiled for sm_90 (no GPU: ``rnnbench.ops.aot``) with the gates in fp32 and in the weights' dtype
(``Plan.half_saved``): registers, spills (stack bytes, local loads and stores) and MUFU tanh
instructions, at the default plans (an H100's 132 multiprocessors).

    PYTHONPATH=src python benchmarks/results/h200/half-saved/aot_half_saved.py > aot_half_saved.txt

(run with Triton 3.6, the GPU's, which compiles for sm_90: ``/tmp/t36`` in this project's notes.)"""

from __future__ import annotations

import sys

import torch

from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan

CASES = [("lstm", 1024, 2048), ("gru", 1024, 2048), ("lstm", 512, 4096), ("lstm", 1024, 1024)]
KEYS = ("reg", "stack", "ldl", "stl", "mufu_tanh")


def main() -> None:
    import triton

    print(f"Triton {triton.__version__}; bf16; cell batch hidden direction plan | gates | " + " ".join(KEYS))
    fp32_pointers = aot.F32_POINTERS
    for cell, batch, hidden in CASES:
        for direction in ("forward", "backward"):
            plan = choose_plan(batch, hidden, aot.GATES[cell], torch.bfloat16, torch.device("cuda"),
                               multiprocessors=132, precision="ieee", direction=direction)
            for half in (False, True):
                if direction == "forward":
                    plan = choose_plan(batch, hidden, aot.GATES[cell], torch.bfloat16, torch.device("cuda"),
                                       multiprocessors=132, precision="ieee", direction=direction, half_saved=half)
                else:  # (the backward reads the gates through a pointer of their dtype)
                    aot.F32_POINTERS = fp32_pointers - ({"gates_ptr", "saved_ptr"} if half else set())
                try:
                    usage = aot.resource_usage(aot.compile_kernel(cell, direction, torch.bfloat16, hidden, plan,
                                                                  "ieee", save=True))
                finally:
                    aot.F32_POINTERS = fp32_pointers
                print(f"{cell} {batch} {hidden} {direction} bb{plan.block_b} bh{plan.block_h} pieces {plan.pieces} | "
                      f"{'16-bit' if half else 'fp32'} | " + " ".join(str(usage.get(k)) for k in KEYS), flush=True)


if __name__ == "__main__":
    if sys.argv[1:]:  # (it takes none: one line, no traceback)
        print("usage: PYTHONPATH=src python aot_half_saved.py > aot_half_saved.txt", file=sys.stderr)
        sys.exit(2)
    main()
