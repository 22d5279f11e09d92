# The LSTM forward with x_t loaded after the step's product, not ahead across the barrier: apply
# x_after_product.diff to 8cb31b7, then from the repository root (Triton 3.6, no GPU):
#     PYTHONPATH=src python benchmarks/results/h200/speed-map/aot-spills/x_after_product.py > benchmarks/results/h200/speed-map/aot-spills/x_after_product.txt
import torch
from rnnbench.ops import aot
for dt, prec in ((torch.bfloat16, "ieee"), (torch.float32, "tf32")):
    for B, H in ((1024, 2048), (1024, 1024), (256, 2048), (128, 4096)):
        plan, use = aot.variant_usage("lstm", "forward", dt, B, H, prec, {}, {})
        print("lstm", str(dt)[6:], B, H, f"b{plan.block_b} h{plan.block_h} k{plan.block_k} s{plan.num_stages} w{plan.num_warps}",
              {k: use[k] for k in ("shared", "reg", "stack", "ldl", "stl")}, flush=True)
