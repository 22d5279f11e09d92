# Compiled for sm_90 without a GPU (rnnbench.ops.aot, Triton 3.6: versions.txt), from the repository root at 8cb31b7:
#     PYTHONPATH=src python benchmarks/results/h200/speed-map/aot-spills/sixteen_warps.py > benchmarks/results/h200/speed-map/aot-spills/sixteen_warps.txt
import torch
from rnnbench.ops import aot
for cell in ("lstm", "gru"):
  for dt, prec in ((torch.bfloat16, "ieee"), (torch.float32, "tf32")):
    for B, H in ((1024, 2048), (1024, 1024), (256, 4096)):
      for d in ("forward", "backward"):
        for o in ({}, dict(num_warps=16)):
          try:
            plan, use = aot.variant_usage(cell, d, dt, B, H, prec, o, {})
            print(cell, str(dt)[6:], B, H, d[:3], o, f"b{plan.block_b} h{plan.block_h} k{plan.block_k} s{plan.num_stages} w{plan.num_warps}",
                  {k: use[k] for k in ("shared", "reg", "stack", "ldl", "stl")}, flush=True)
          except Exception as e:
            print(cell, str(dt)[6:], B, H, d[:3], o, "ERR", type(e).__name__, str(e)[:160], flush=True)
