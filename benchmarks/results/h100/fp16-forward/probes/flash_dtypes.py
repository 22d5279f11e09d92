"""Probe: FlashRNN's LSTM forward (batch 16, 1024 steps, hidden 768), fp16 against bf16, eager.

    PYTHONPATH=src python3 THIS OUT_DIR

Why: in every H100 seed run since the Gluon forward, our eager fp16 forward took 0.10-0.12 ms
longer than our bf16 one (2.64-2.65 against 2.52-2.56 ms; graphed 2.47-2.49 against 2.42-2.43),
while the kernel alone took the same time in both (plan_sweep, gate-split/: 2.236 against 2.246
µs a step). Which part of the call differs?

For each module (ours, torch.nn's) and dtype, in the order A B B A over the dtypes: the no-grad
forward timed as the engine times it (events around the call, synchronised before and after;
median of 30 after 5 warm-up calls), then 10 calls under torch.profiler: per call the kernels'
names and durations, when the first kernel starts after the call begins, and the gaps between
kernels. Writes OUT_DIR/flash_dtypes.txt and .json."""
import json
import statistics
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
T, B, H = 1024, 16, 768
CALLS = 30


def build(which, dtype):
    torch.manual_seed(0)
    m = ours.LSTM(H, H, backend="triton") if which == "triton" else torch.nn.LSTM(H, H)
    m = m.to("cuda", dtype)
    x = torch.randn(T, B, H, device="cuda", dtype=dtype)
    hx = tuple(torch.randn(1, B, H, device="cuda", dtype=dtype) for _ in range(2))
    return m, x, hx


def timed(m, x, hx):
    out = []
    with torch.no_grad():
        for _ in range(5):
            m(x, hx)
        for _ in range(CALLS):
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            m(x, hx)
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e))
    return statistics.median(out)


def anatomy(m, x, hx, tag):
    with torch.no_grad():
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(12):
                torch.cuda.synchronize()
                with record_function(f"call{i}"):
                    m(x, hx)
                torch.cuda.synchronize()
    trace = OUT / f"{tag}.trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    calls = sorted((e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("call")),
                   key=lambda e: e["ts"])
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    per = []
    for k, c in enumerate(calls[2:], 2):
        end = calls[k + 1]["ts"] if k + 1 < len(calls) else float("inf")
        ks = [e for e in kernels if c["ts"] <= e["ts"] < end]
        per.append({"first_at": ks[0]["ts"] - c["ts"] if ks else None,
                    "last_end": max(e["ts"] + e["dur"] for e in ks) - c["ts"] if ks else None,
                    "kernels": [(e["name"][:60], e["ts"] - c["ts"], e["dur"]) for e in ks]})
    trace.unlink()
    return per


results = {}
lines = ["module dtype | forward ms (median of 30) | first kernel at µs | last ends µs | kernels: name start+dur µs"]
for which in ("triton", "torch-nn"):
    for dtype in (torch.float16, torch.bfloat16, torch.bfloat16, torch.float16):
        m, x, hx = build(which, dtype)
        ms = timed(m, x, hx)
        per = anatomy(m, x, hx, f"{which}-{dtype}")
        results.setdefault(f"{which} {dtype}", []).append({"ms": ms, "calls": per})
        med = lambda key: statistics.median(p[key] for p in per if p[key] is not None)  # noqa: E731
        names = per[-1]["kernels"]
        ktxt = "; ".join(f"{n} @{statistics.median(p['kernels'][j][1] for p in per if len(p['kernels']) > j):.0f}"
                         f"+{statistics.median(p['kernels'][j][2] for p in per if len(p['kernels']) > j):.0f}"
                         for j, (n, _, _) in enumerate(names))
        lines.append(f"{which} {str(dtype)[6:]} | {ms:.4f} | {med('first_at'):.0f} | {med('last_end'):.0f} | {ktxt}")
        print(lines[-1], flush=True)
        del m, x, hx
        torch.cuda.empty_cache()
(OUT / "flash_dtypes.txt").write_text("\n".join(lines) + "\n")
(OUT / "flash_dtypes.json").write_text(json.dumps(results))
