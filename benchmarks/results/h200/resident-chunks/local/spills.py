"""The resident forward at zaremba-large's hidden 1500, batch 20 compiled for sm_90 without a GPU
(Triton 3.6, the device's release, in a side venv), its chunk width (``block_k``) 128 (the
default), 64 and 32: registers and bytes spilled a thread. A compile check, not a measurement
(``../plan_sweep-resident_chunks.jsonl`` is that).

    PYTHONPATH=src python benchmarks/results/h200/resident-chunks/local/spills.py   # with Triton 3.6
"""
import torch
import triton

from rnnbench.ops.aot import compile_kernel, resource_usage
from rnnbench.ops.plans import choose_plan

print("triton", triton.__version__, "torch", torch.__version__)
cuda = torch.device("cuda")
for cell, gates in (("lstm", 4), ("gru", 3)):
    for dtype, precision in ((torch.bfloat16, "ieee"), (torch.float32, "tf32")):
        for block_k in (128, 64, 32):
            p = choose_plan(20, 1500, gates, dtype, cuda, multiprocessors=132, precision=precision, gluon=False,
                            forward_block_k=block_k)
            usage = resource_usage(compile_kernel(cell, "forward", dtype, 1500, p, precision))
            print(f"{cell:4s} {str(dtype)[6:]:8s} block_k {p.block_k:3d} (units {p.block_h}, rows {p.block_b}, "
                  f"resident {int(p.w_resident)}, padded {int(p.pad_rows)}, fp16 operands {int(p.half_operands)}) "
                  f"reg {usage['reg']} spill {usage['stack']} shared {usage['shared']}", flush=True)
