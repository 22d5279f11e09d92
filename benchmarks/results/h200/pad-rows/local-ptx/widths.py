"""The padded and unpadded kernels compiled for sm_90 without a GPU (Triton 3.6, the device's
release, in a side venv): their global loads and stores by width, ``cp.async`` copies by size,
registers and spills (rnnbench.ops.aot). A compile check, not a measurement.

    PYTHONPATH=src python benchmarks/results/h200/pad-rows/local-ptx/widths.py   # with Triton 3.6
"""
import dataclasses

import torch
import triton

from rnnbench.ops.aot import compile_kernel, global_accesses, resource_usage
from rnnbench.ops.plans import choose_plan, row_stride

print("triton", triton.__version__, "torch", torch.__version__)
cuda = torch.device("cuda")
for direction, shapes in (("forward", ((128, 650), (128, 640), (32, 650))), ("backward", ((128, 650), (128, 640)))):
    for cell, gates in (("lstm", 4), ("gru", 3)):
        for batch, hidden in shapes:
            plan = choose_plan(batch, hidden, gates, torch.float32, cuda, multiprocessors=132, precision="tf32",
                               direction=direction)
            for pad in (True, False) if plan.pad_rows else (False,):
                p = dataclasses.replace(plan, pad_rows=pad)
                k = compile_kernel(cell, direction, torch.float32, hidden, p, "tf32")
                usage = resource_usage(k)
                print(f"{direction:8s} {cell:4s} B{batch:<4d} H{hidden:<4d} stride {row_stride(p, hidden):4d} "
                      f"reg {usage['reg']:3d} spill {usage['stack']:3d} B {global_accesses(k.asm['ptx'])}", flush=True)
