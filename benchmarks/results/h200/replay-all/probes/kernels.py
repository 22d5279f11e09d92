"""Where an eager forward's device time goes: per call, from the call's start on the host to its
kernels' start, each kernel's duration, and the call's host span (torch.profiler's trace, CUPTI).
PYTHONPATH=src python3 ab/kernels.py OUTDIR"""
import json, statistics, sys
from pathlib import Path
import torch
from torch.profiler import profile, ProfilerActivity, record_function
from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.ops.recurrence import plan_override
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
G = dict(batch_size=20, input_size=100, loss="last_step")
CASES = []
for dt in ("tf32", "fp32"):
    for T in (1, 30, 90):
        for prod in (True, False):
            CASES.append((dict(cell="rnn_tanh", seq_len=T, hidden_size=100, dtype=dt, **G), prod))
    for T in (1, 30, 90):
        CASES.append((dict(cell="lstm", seq_len=T, hidden_size=100, dtype=dt, **G), None))
    CASES.append((dict(cell="lstm", seq_len=30, hidden_size=500, dtype=dt, **G), None))
    CASES.append((dict(cell="rnn_tanh", seq_len=30, hidden_size=500, dtype=dt, **G), None))
rows = []
for spec, prod in CASES:
    for lane in ("triton", "torch-nn"):
        if lane == "torch-nn" and prod is False:
            continue
        case = Case(**spec, mode="forward", device="cuda")
        inputs = make_inputs(case)
        with matmul_mode(case.dtype), plan_override(**({} if prod is None else {"forward_produce": prod})):
            module = get_lane(lane).module_for(case, inputs.weights)
            fn = module_call(module, case, inputs)[0]
            for _ in range(30):
                fn()
            torch.cuda.synchronize()
            # the engine's clock
            ev = []
            for _ in range(200):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(); s.record(); fn(); e.record(); e.synchronize(); ev.append(s.elapsed_time(e) * 1e3)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(60):
                    torch.cuda.synchronize()
                    with record_function(f"call{i}"):
                        fn()
                torch.cuda.synchronize()
        tf = out / "trace.json"; prof.export_chrome_trace(str(tf))
        tr = json.loads(tf.read_text())["traceEvents"]
        calls = sorted([e for e in tr if e.get("cat") == "user_annotation" and e["name"].startswith("call")], key=lambda e: e["ts"])
        kern = sorted([e for e in tr if e.get("cat") == "kernel"], key=lambda e: e["ts"])
        per = {}
        lat, span, dev, host = [], [], [], []
        for c, nxt in zip(calls, calls[1:] + [None]):
            ks = [k for k in kern if k["ts"] >= c["ts"] and (nxt is None or k["ts"] < nxt["ts"])]
            if not ks:
                continue
            lat.append(ks[0]["ts"] - c["ts"]); span.append(ks[-1]["ts"] + ks[-1]["dur"] - c["ts"]); host.append(c["dur"])
            dev.append(sum(k["dur"] for k in ks))
            for k in ks:
                per.setdefault(k["name"][:60], []).append(k["dur"])
        med = statistics.median
        row = dict(spec=spec, produce=prod, lane=lane, event_us=med(ev), host_us=med(host), first_kernel_after_us=med(lat),
                   last_kernel_end_us=med(span), device_sum_us=med(dev), kernels={k: (len(v), med(v)) for k, v in per.items()})
        rows.append(row)
        print(f"{lane:8s} {spec['cell']:8s} H{spec['hidden_size']:<4d} T{spec['seq_len']:<3d} {spec['dtype']} prod={prod!s:5s} "
              f"event {row['event_us']:6.1f}  host {row['host_us']:6.1f}  1st-kernel@ {row['first_kernel_after_us']:6.1f}  "
              f"end@ {row['last_kernel_end_us']:6.1f}  device {row['device_sum_us']:6.1f}  n_kernels/call {sum(n for n, _ in row['kernels'].values())/max(1,len(lat)):.1f}", flush=True)
        for k, (n, d) in row["kernels"].items():
            print(f"      {d:7.2f} µs  x{n/len(lat):.1f}  {k}", flush=True)
(out / "kernels.json").write_text(json.dumps(rows, indent=1))
(out / "trace.json").unlink()
