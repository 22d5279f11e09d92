# Compiled for sm_90 without a GPU (rnnbench.ops.aot, Triton 3.6: versions.txt), from the repository root at 8cb31b7:
#     PYTHONPATH=src python benchmarks/results/h200/speed-map/aot-spills/chunks_and_rows.py > benchmarks/results/h200/speed-map/aot-spills/chunks_and_rows.txt
import torch, sys, time
from rnnbench.ops import aot
rows = []
for cell in ("lstm", "gru"):
  for dt, prec in ((torch.bfloat16, "ieee"), (torch.float32, "tf32")):
    for B, H in ((1024, 2048), (1024, 1024)):
      for d in ("forward", "backward"):
        for o in ({}, dict(num_stages=2), dict(block_k=64, num_stages=1), dict(block_b=128, block_h=128)):
          t = time.time()
          try:
            plan, use = aot.variant_usage(cell, d, dt, B, H, prec, o, {})
            print(cell, str(dt)[6:], B, H, d[:3], o, f"b{plan.block_b} h{plan.block_h} k{plan.block_k} s{plan.num_stages} w{plan.num_warps}", use, f"{time.time()-t:.0f}s", flush=True)
          except Exception as e:
            print(cell, str(dt)[6:], B, H, d[:3], o, "ERR", str(e)[:200], flush=True)
