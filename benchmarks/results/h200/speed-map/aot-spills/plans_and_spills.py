"""For every LSTM/GRU pair of the speed maps in TF32 and bf16 at hidden 1024 and more, batch 16 and
more: the default plan of each direction compiled for sm_90 without a GPU (ops/aot.py, Triton 3.6:
versions.txt; planned for 132 multiprocessors), its registers and spills beside the ratio measured
on the H200 (torch-nn's time / ours). From the repository root at 8cb31b7 (plans as at a4eb07b):

    PYTHONPATH=src python benchmarks/results/h200/speed-map/aot-spills/plans_and_spills.py > .../plans_and_spills.txt
"""
import gzip, json, sys
from pathlib import Path
import torch
from rnnbench.ops import aot

MAPS = Path("benchmarks/results/h200/speed-map")
latest = {}
for p in sorted(MAPS.glob("*/map.jsonl.gz")):
    for r in map(json.loads, gzip.open(p, "rt")):
        if r.get("record") == "result":
            latest[r["cell"], r["dtype"], r["mode"], r["batch_size"], r["hidden_size"], r["lane"]] = r
DT = {"bf16": (torch.bfloat16, "ieee"), "tf32": (torch.float32, "tf32")}
print("cell dtype batch hidden | fwd ratio, train ratio | direction: block_b block_h block_k stages warps, "
      "forward: accumulator fp32 a thread; shared bytes, registers, stack bytes, local loads")
for cell in ("lstm", "gru"):
    for dtype in ("tf32", "bf16"):
        sizes = sorted({(k[3], k[4]) for k in latest if k[0] == cell and k[1] == dtype and k[4] >= 1024 and k[3] >= 16})
        for batch, hidden in sizes:
            ratios = []
            for mode in ("forward", "train"):
                o, b = latest.get((cell, dtype, mode, batch, hidden, "triton")), latest.get((cell, dtype, mode, batch, hidden, "torch-nn"))
                ratios.append(f"{b['ms_per_batch'] / o['ms_per_batch']:.2f}" if o and b and o["status"] == b["status"] == "ok" else (o or {}).get("status", "-"))
            parts = []
            for direction in ("forward", "backward"):
                try:
                    plan, use = aot.variant_usage(cell, direction, DT[dtype][0], batch, hidden, DT[dtype][1], {}, {})
                    # the forward's gate tile, fp32, a thread's share (the GRU's is four gate blocks high too)
                    acc = f" acc {plan.block_b * 4 * plan.block_h // (32 * plan.num_warps)}" if direction == "forward" else ""
                    parts.append(f"{direction[:3]}: b{plan.block_b} h{plan.block_h} k{plan.block_k} s{plan.num_stages} "
                                 f"w{plan.num_warps}{acc} smem {use['shared']} reg {use['reg']} stack {use['stack']} ldl {use['ldl']}")
                except Exception as e:
                    parts.append(f"{direction[:3]}: {type(e).__name__}: {str(e)[:80]}")
            print(f"{cell} {dtype} {batch} {hidden} | {ratios[0]}, {ratios[1]} | " + " | ".join(parts), flush=True)
