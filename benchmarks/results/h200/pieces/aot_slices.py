# The LSTM's 16-bit forward in slices of units (Plan.pieces) compiled for sm_90 without a GPU
# (rnnbench.ops.aot, Triton 3.6: versions.txt), from the repository root:
#     PYTHONPATH=src python benchmarks/results/h200/pieces/aot_slices.py > benchmarks/results/h200/pieces/aot_slices.txt
# Each shape's default plan (tiles, chunks, warps) with 1, 2, 4 and 8 slices; the accumulator is
# the whole tile's fp32 values a thread (plans.forward_accumulator), a slice's that over the slices.
import torch
from rnnbench.ops import aot
from rnnbench.ops.plans import forward_accumulator
for dt in (torch.bfloat16, torch.float16):
    for B, H in ((1024, 2048), (512, 4096), (1024, 1024), (512, 2048), (256, 4096), (512, 1024), (256, 2048)):
        for pieces in (1, 2, 4, 8):
            plan, use = aot.variant_usage("lstm", "forward", dt, B, H, "ieee", {}, {"pieces": pieces})
            print("lstm", str(dt)[6:], B, H, f"pieces {pieces}", f"b{plan.block_b} h{plan.block_h} k{plan.block_k} "
                  f"s{plan.num_stages} w{plan.num_warps} acc {forward_accumulator(plan, 4)}",
                  {k: use.get(k) for k in ("shared", "reg", "stack", "ldl", "stl")}, flush=True)
