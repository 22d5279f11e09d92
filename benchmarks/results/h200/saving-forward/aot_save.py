"""The sliced forwards compiled for sm_90 (Triton 3.6, no GPU: ``rnnbench.ops.aot``) with and without
``SAVE``, and saving with ``x_proj`` typed fp32: registers, spills (stack bytes, local loads and
stores) and MUFU tanh instructions, at the default plans (an H100's 132 multiprocessors); then TF32's
GRU forward at 128 rows on its own operands, whole and in 2 slices.

    PYTHONPATH=src python benchmarks/results/h200/saving-forward/aot_save.py > aot_save.txt

(run with a Triton 3.6 that compiles for sm_90: ``/tmp/t36`` in this project's notes.)"""

from __future__ import annotations

import sys

import torch

from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan

CASES = [("lstm", 1024, 2048, torch.bfloat16, "ieee"), ("gru", 1024, 2048, torch.bfloat16, "ieee"),
         ("lstm", 256, 4096, torch.bfloat16, "ieee"), ("lstm", 1024, 2048, torch.float32, "tf32")]


def main() -> None:
    keys = ("reg", "stack", "ldl", "stl", "mufu_tanh")
    print("cell batch hidden dtype | variant | " + " ".join(keys))
    fp32_pointers = aot.F32_POINTERS
    for cell, batch, hidden, dtype, precision in CASES:
        plan = choose_plan(batch, hidden, aot.GATES[cell], dtype, torch.device("cuda"), multiprocessors=132,
                           precision=precision, direction="forward")
        for label, save, x_proj_fp32 in (("no save", False, False), ("save", True, False),
                                         ("save, x_proj fp32", True, True)):
            aot.F32_POINTERS = fp32_pointers | ({"x_proj_ptr"} if x_proj_fp32 else set())
            try:
                usage = aot.resource_usage(aot.compile_kernel(cell, "forward", dtype, hidden, plan, precision,
                                                              save=save))
            finally:
                aot.F32_POINTERS = fp32_pointers
            print(f"{cell} {batch} {hidden} {str(dtype).removeprefix('torch.')} (bb{plan.block_b} bh{plan.block_h} "
                  f"pieces {plan.pieces}) | {label} | " + " ".join(str(usage.get(k)) for k in keys), flush=True)


def gru_tf32_at_128_rows() -> None:
    """TF32's GRU forward at batch 1024, hidden 2048 at 128 rows on its own operands, whole and in 2
    slices, saving and not (``plans.wide_rows_default`` took 2 slices for it)."""
    keys = ("reg", "stack", "ldl", "stl")
    for pieces in (1, 2):
        plan = choose_plan(1024, 2048, 3, torch.float32, torch.device("cuda"), multiprocessors=132, precision="tf32",
                           direction="forward", block_b=128, block_h=128, pieces=pieces)
        for save in (False, True):
            usage = aot.resource_usage(aot.compile_kernel("gru", "forward", torch.float32, 2048, plan, "tf32",
                                                          save=save))
            print(f"gru 1024 2048 tf32 (bb128 bh128 pieces {pieces}) | {'save' if save else 'no save'} | "
                  + " ".join(str(usage.get(k)) for k in keys), flush=True)


if __name__ == "__main__":
    if sys.argv[1:]:  # (it takes none: one line, no traceback)
        print("usage: PYTHONPATH=src python aot_save.py > aot_save.txt", file=sys.stderr)
        sys.exit(2)
    main()
    gru_tf32_at_128_rows()
