"""What cuDNN launches for one torch.nn.LSTM forward at FlashRNN's shape (batch 16, seq 1024,
hidden 768, one layer), fp16 and bf16, no grad: every kernel's name, duration, grid, block,
registers a thread and shared memory, from torch.profiler's Chrome trace (Kineto records them
per launch). The third warm call is the one profiled.

    PYTHONPATH=src python3 benchmarks/results/h200/cudnn-anatomy/anatomy.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, "src")
from rnnbench.env import environment  # noqa: E402


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{"record": "env", **environment()}]
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(768, 768).cuda().to(dtype)
        x = torch.randn(1024, 16, 768, device="cuda", dtype=dtype)
        with torch.no_grad():
            for _ in range(3):
                lstm(x)
            torch.cuda.synchronize()
            trace = out / f"trace-{name}.json"
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                lstm(x)
                torch.cuda.synchronize()
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        t0 = min(e["ts"] for e in kernels)
        print(f"== {name}: {len(kernels)} kernels")
        for e in sorted(kernels, key=lambda e: e["ts"]):
            a = e.get("args", {})
            row = {"dtype": name, "kernel": e["name"], "start_us": e["ts"] - t0, "dur_us": e["dur"],
                   "grid": a.get("grid"), "block": a.get("block"), "registers_per_thread": a.get("registers per thread"),
                   "shared_memory": a.get("shared memory"), "blocks_per_sm": a.get("blocks per SM"),
                   "occupancy": a.get("est. achieved occupancy %")}
            rows.append(row)
            print(f"  {row['start_us']:9.1f} {row['dur_us']:9.1f} grid {row['grid']} block {row['block']} "
                  f"regs {row['registers_per_thread']} smem {row['shared_memory']}  {e['name'][:90]}")
        trace.unlink()  # (large; the rows keep what matters)
    (out / "anatomy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
