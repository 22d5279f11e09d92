# The LSTM's backward in slices (the backward's Plan.pieces) compiled for sm_90 without a GPU
# (rnnbench.ops.aot, Triton 3.6), from the repository root:
#     PYTHONPATH=src python benchmarks/results/h200/pieces/aot_backward.py > benchmarks/results/h200/pieces/aot_backward.txt
# bf16, each shape's default backward plan (gs: its gate split) and with gate_split 0, in 1, 2 and 4 slices.
import torch
from rnnbench.ops import aot
for B, H in ((1024, 2048), (512, 4096), (1024, 1024), (512, 2048)):
    for gs in (None, 0):
        for pieces in (1, 2, 4):
            fields = {} if gs is None else {"gate_split": gs}
            try:
                plan, use = aot.variant_usage("lstm", "backward", torch.bfloat16, B, H, "ieee", fields, {"pieces": pieces})
                print(B, H, f"gs{plan.gate_split}", pieces, f"b{plan.block_b} h{plan.block_h} k{plan.block_k} s{plan.num_stages} w{plan.num_warps}", {k: use.get(k) for k in ("shared", "reg", "stack", "ldl", "stl")}, flush=True)
            except Exception as e:
                print(B, H, gs, pieces, "ERR", str(e)[:200], flush=True)
