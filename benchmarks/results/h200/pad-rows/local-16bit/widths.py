"""The 16-bit forward with rows of its own padded to 16 bytes (Plan.pad_rows asked for, SPLIT_ONCE
5) and without, compiled for sm_90 without a GPU (Triton 3.6, the device's release, in a side
venv): global accesses by width, ``cp.async`` copies by size, registers and spills. A compile check,
not a measurement; the plans are the exchange plans with Gluon off.

    PYTHONPATH=src python benchmarks/results/h200/pad-rows/local-16bit/widths.py   # with Triton 3.6
"""
import dataclasses

import torch
import triton

from rnnbench.ops.aot import compile_kernel, global_accesses, resource_usage
from rnnbench.ops.plans import choose_plan, row_stride

print("triton", triton.__version__, "torch", torch.__version__)
cuda = torch.device("cuda")
for cell, gates in (("lstm", 4), ("gru", 3)):
    for batch, hidden in ((128, 650), (32, 650), (20, 1500), (128, 640)):
        plan = choose_plan(batch, hidden, gates, torch.bfloat16, cuda, multiprocessors=132, precision="ieee",
                           gluon=False)
        for pad in (True, False) if hidden % 8 else (False,):
            p = dataclasses.replace(plan, pad_rows=pad)
            k = compile_kernel(cell, "forward", torch.bfloat16, hidden, p, "ieee")
            usage = resource_usage(k)
            print(f"{cell:4s} B{batch:<4d} H{hidden:<4d} stride {row_stride(p, hidden):4d} res {int(p.w_resident)} "
                  f"reg {usage['reg']:3d} spill {usage['stack']:3d} B {global_accesses(k.asm['ptx'])}", flush=True)
