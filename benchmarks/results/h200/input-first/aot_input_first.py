"""The sliced forwards with the step's input loaded after the product and into the accumulator
before it (``Plan.input_first``), compiled for sm_90 (no GPU: ``rnnbench.ops.aot``): registers,
spills (stack bytes, local loads and stores), HGMMA and MUFU tanh instructions, at the default
plans (132 multiprocessors), saving for the backward and not.

    PYTHONPATH=src python benchmarks/results/h200/input-first/aot_input_first.py > aot_input_first.txt

(run with Triton 3.6, the GPU's, which compiles for sm_90: ``/tmp/t36`` in this project's notes.)"""

from __future__ import annotations

import dataclasses
import sys

import torch

from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan

CASES = [("lstm", 1024, 2048, "bf16"), ("gru", 1024, 2048, "bf16"), ("lstm", 512, 4096, "bf16"),
         ("lstm", 1024, 1024, "bf16"), ("lstm", 1024, 2048, "tf32")]
KEYS = ("reg", "stack", "ldl", "stl", "hgmma", "mufu_tanh")


def main() -> None:
    import triton

    print(f"Triton {triton.__version__}; cell batch hidden dtype plan save | input_first | " + " ".join(KEYS))
    for cell, batch, hidden, name in CASES:
        dtype, precision = (torch.float32, "tf32") if name == "tf32" else (torch.bfloat16, "ieee")
        plan = choose_plan(batch, hidden, aot.GATES[cell], dtype, torch.device("cuda"), multiprocessors=132,
                           precision=precision)
        for save in (False, True):
            for first in (False, True):
                asked = dataclasses.replace(plan, input_first=first)
                usage = aot.resource_usage(aot.compile_kernel(cell, "forward", dtype, hidden, asked, precision,
                                                              save=save))
                print(f"{cell} {batch} {hidden} {name} bb{plan.block_b} bh{plan.block_h} pieces {plan.pieces} "
                      f"{'save' if save else 'no-save'} | {first} | " + " ".join(str(usage.get(k)) for k in KEYS),
                      flush=True)


if __name__ == "__main__":
    if sys.argv[1:]:  # (it takes none: one line, no traceback)
        print("usage: PYTHONPATH=src python aot_input_first.py > aot_input_first.txt", file=sys.stderr)
        sys.exit(2)
    from rnnbench.ops.plans import Plan

    if "input_first" not in Plan.__dataclass_fields__:  # (a record of e6c42d7's tree)
        print("aot_input_first.py: Plan.input_first was reverted after e6c42d7; run it in that commit's tree",
              file=sys.stderr)
        sys.exit(2)
    main()
