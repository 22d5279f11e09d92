# The GRU's 16-bit forward in slices of units (Plan.pieces) compiled for sm_90 without a GPU
# (rnnbench.ops.aot, Triton 3.6: versions.txt), from the repository root:
#     PYTHONPATH=src python benchmarks/results/h200/pieces/aot_slices_gru.py > benchmarks/results/h200/pieces/aot_slices_gru.txt
# As aot_slices.py (the LSTM's), for the GRU at the shapes where its accumulator is 128-256 values a thread.
import torch
from rnnbench.ops import aot
from rnnbench.ops.plans import forward_accumulator
for B, H in ((1024, 2048), (512, 4096), (1024, 1024)):
    for pieces in (1, 2, 4, 8):
        plan, use = aot.variant_usage("gru", "forward", torch.bfloat16, B, H, "ieee", {}, {"pieces": pieces})
        print("gru bfloat16", B, H, f"pieces {pieces}", f"b{plan.block_b} h{plan.block_h} k{plan.block_k} "
              f"s{plan.num_stages} w{plan.num_warps} acc {forward_accumulator(plan, 3)}",
              {k: use.get(k) for k in ("shared", "reg", "stack", "ldl", "stl")}, flush=True)
