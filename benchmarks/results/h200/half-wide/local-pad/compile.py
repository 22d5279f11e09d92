"""TF32's fp16-operand forwards compiled for sm_90 without a GPU (Triton 3.6, the device's release,
in a side venv), rows unpadded and padded to 16 bytes (Plan.pad_rows): registers, spills, shared
memory, HGMMA count (rnnbench.ops.aot.resource_usage). A compile check, not a measurement.

    PYTHONPATH=src python benchmarks/results/h200/half-wide/local-pad/compile.py   # with Triton 3.6
"""
import dataclasses

import torch
import triton

from rnnbench.ops.aot import compile_kernel, resource_usage
from rnnbench.ops.plans import choose_plan, row_stride

print("triton", triton.__version__, "torch", torch.__version__)
cuda = torch.device("cuda")
for cell, gates in (("lstm", 4), ("gru", 3)):
    for batch, hidden in ((128, 650), (32, 650), (128, 500), (20, 1500)):
        plan = choose_plan(batch, hidden, gates, torch.float32, cuda, multiprocessors=132, precision="tf32")
        for pad in (False, True):
            p = dataclasses.replace(plan, pad_rows=pad)
            for lengths in (False, True):
                k = compile_kernel(cell, "forward", torch.float32, hidden, p, "tf32", lengths=lengths)
                print(f"{cell:4s} B{batch:<4d} H{hidden:<5d} res={int(p.w_resident)} bk={p.block_k} w={p.num_warps} "
                      f"stride {row_stride(p, hidden):5d} lengths {int(lengths)} {resource_usage(k)}", flush=True)
