"""Probe: where one eager forward goes, from the profiler's timeline (torch.profiler, CPU and CUDA).

    PYTHONPATH=src python3 THIS OUT_DIR

Per case (strict fp32, the initial states given as the engine gives them) and module (torch.nn's,
ours), 40 no-grad forwards, each synchronised before and after, each inside a ``record_function``.
From the trace, per call: the host's span of the call, when its first kernel starts and its last
ends (µs after the call began), the kernels' busy time, and the host time of each runtime call
(cudaLaunchKernel, cuLaunchKernel, ...) at its offset. Medians over the calls. The profiler adds
host time of its own; the columns compare the two modules under the same profiler. Writes
OUT_DIR/eager_anatomy.txt and the traces."""
import json, statistics, sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
CASES = [("rnn_tanh", 20, 100), ("lstm", 20, 100), ("lstm", 32, 128), ("gru", 32, 128)]
CALLS = 40
lines = ["case | module | host span | first kernel at | last kernel ends | kernels | busy | runtime calls (at+dur)"]
for cell, b, h in CASES:
    x = torch.randn(30, b, h, device="cuda")
    h0 = torch.randn(1, b, h, device="cuda")
    hx = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
    for name in ("torch-nn", "triton"):
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(cell, torch.nn.RNN)
        if name == "triton":
            cls = {"lstm": ours.LSTM, "gru": ours.GRU}.get(cell, ours.RNN)
        torch.manual_seed(0)
        m = (cls(h, h, backend="triton") if name == "triton" else cls(h, h)).cuda()
        with torch.no_grad():
            for _ in range(20):
                m(x, hx)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(CALLS):
                    torch.cuda.synchronize()
                    with record_function(f"call{i}"):
                        m(x, hx)
                    torch.cuda.synchronize()
        trace = OUT / f"{cell}-{b}-{h}-{name}.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
        calls = sorted((e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("call")),
                       key=lambda e: e["ts"])
        kernels = [e for e in events if e.get("cat") == "kernel"]
        runtime = [e for e in events if e.get("cat") == "cuda_runtime" and "Synchronize" not in e["name"]]
        per = {"span": [], "first": [], "last": [], "count": [], "busy": []}
        rt = {}
        for k, c in enumerate(calls[5:], 5):  # the first calls start the profiler
            end = calls[k + 1]["ts"] if k + 1 < len(calls) else float("inf")
            ks = [e for e in kernels if c["ts"] <= e["ts"] < end]
            if not ks:
                continue
            per["span"].append(c["dur"])
            per["first"].append(min(e["ts"] for e in ks) - c["ts"])
            per["last"].append(max(e["ts"] + e["dur"] for e in ks) - c["ts"])
            per["count"].append(len(ks))
            per["busy"].append(sum(e["dur"] for e in ks))
            for j, e in enumerate(sorted((e for e in runtime if c["ts"] <= e["ts"] < c["ts"] + c["dur"]),
                                         key=lambda e: e["ts"])):
                rt.setdefault((j, e["name"]), []).append((e["ts"] - c["ts"], e["dur"]))
        med = {k: statistics.median(v) for k, v in per.items()}
        calls_txt = ", ".join(f"{n}@{statistics.median(a for a, _ in v):.0f}+{statistics.median(d for _, d in v):.0f}"
                              for (j, n), v in sorted(rt.items()))
        lines.append(f"{cell} B{b} H{h} | {name} | {med['span']:.0f} | {med['first']:.0f} | {med['last']:.0f} | "
                     f"{med['count']:.0f} | {med['busy']:.0f} | {calls_txt}")
        print(lines[-1], flush=True)
(OUT / "eager_anatomy.txt").write_text("\n".join(lines) + "\n")
