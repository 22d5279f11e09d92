"""Where a training step's device time goes at large sizes, ours against cuDNN's (one GPU).

    PYTHONPATH=src python3 benchmarks/results/h200/train-parts/probes/kernels.py OUT_DIR

Why: past batch x hidden 2^20 our forward is level with cuDNN's or faster, yet our training step is
0.83-0.93x its speed in bf16 (speed-map/wide-rows-bf16-063585d: LSTM 1024 x 2048 22.63 ms against
19.56, of which the forwards 7.08 and 7.07). The backward's recurrence kernel alone is some 5 ms of
our 15.5 (plan_sweep: 102.9 us a step x 50); the rest is matmuls and element-wise work this names.

For each case and lane (the engine's ``workload.lane_step``, seq_len 50, input = hidden, the step it
times): the synchronised ms a call (``host_time.synced_us``: median of 20 after 5 warm-up calls and
its own one) and, from 3 profiled calls (torch.profiler, CUDA activity), each kernel's device µs a
call, summed by name, and the device's busy µs a call. Writes ``OUT_DIR/kernels.jsonl`` (an environment record first) and prints the top
kernels per lane.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

CASES = [("lstm", 1024, 2048, "bf16"), ("gru", 1024, 2048, "bf16"), ("lstm", 512, 4096, "bf16"),
         ("lstm", 1024, 2048, "tf32")]
LANES = ("torch-nn", "triton")
PROFILED = 3


def kernel_times(fn) -> tuple[dict, float]:
    """({kernel name: device µs a call}, busy device µs a call) over :data:`PROFILED` calls."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(PROFILED):
            fn()
        torch.cuda.synchronize()
    sums = collections.Counter()
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            sums[e.name] += e.time_range.elapsed_us() / PROFILED
    return dict(sums), sum(sums.values())


def main(argv: list[str]) -> int:
    from rnnbench.cases import Case
    from rnnbench.env import environment
    from rnnbench.lanes import LANES as REGISTRY
    from rnnbench.precision import matmul_mode
    from rnnbench.workload import lane_step, make_inputs
    from host_time import synced_us

    if len(argv) != 1:  # (one line, no traceback)
        print("usage: python3 kernels.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "kernels.jsonl", "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        for cell, b, h, dtype in CASES:
            case = Case(cell=cell, batch_size=b, seq_len=50, input_size=h, hidden_size=h, dtype=dtype, mode="train",
                        device="cuda")
            inputs = make_inputs(case)
            with matmul_mode(dtype):
                for lane in LANES:
                    step = lane_step(REGISTRY[lane], case, inputs)
                    for _ in range(5):
                        step.fn()
                    ms = synced_us(step.fn, calls=20) / 1e3  # (the engine's timing: host_time.py)
                    kernels, busy = kernel_times(step.fn)
                    step.close()
                    row = {"cell": cell, "batch_size": b, "hidden_size": h, "dtype": dtype, "lane": lane,
                           "synced_ms": ms, "busy_us": busy, "kernels_us": kernels}
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(f"\n{cell} B{b} H{h} {dtype} {lane}: {ms:.3f} ms a call, device busy {busy / 1e3:.3f} ms",
                          flush=True)
                    for name, us in sorted(kernels.items(), key=lambda kv: -kv[1])[:14]:
                        print(f"  {us:9.1f} us  {name[:110]}", flush=True)
            del inputs
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
