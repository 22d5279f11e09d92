"""Where an eager forward's time goes with the input projected ahead (Plan.input_ahead) and
without: one LSTM layer at FlashRNN's shape (batch 16, seq 1024, hidden 768, fp16), forward
under no_grad and with grad. Prints (1) each plan's eager time a call (CUDA events, median of 20,
after 3 warm-ups), the host time a call (to return), and (2) the kernel timeline of one call from
torch.profiler: start (µs after the first kernel), duration, name.

    PYTHONPATH=src python3 benchmarks/results/h200/input-ahead/probes/timeline.py
"""
import statistics
import time

import torch

from rnnbench.ops.recurrence import plan_override, recurrent_layer

B, T, H = 16, 1024, 768
torch.manual_seed(0)
dt = torch.float16
x = torch.randn(T, B, H, device="cuda", dtype=dt)
w_ih = (torch.rand(4 * H, H, device="cuda") * 2 - 1).mul(H ** -0.5).to(dt)
w_hh = (torch.rand(4 * H, H, device="cuda") * 2 - 1).mul(H ** -0.5).to(dt)
b_ih = torch.zeros(4 * H, device="cuda", dtype=dt)
b_hh = torch.zeros(4 * H, device="cuda", dtype=dt)


def call(grad):
    with torch.set_grad_enabled(grad):
        xx = x.requires_grad_(grad)
        return recurrent_layer("lstm", xx, None, None, w_ih, w_hh, b_ih, b_hh)


for plan in ("first", "ahead"):
    with plan_override(forward_input_ahead=plan == "ahead"):
        for grad in (False, True):
            for _ in range(3):
                call(grad)
            torch.cuda.synchronize()
            dev, host = [], []
            for _ in range(20):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                t0 = time.perf_counter()
                call(grad)
                host.append((time.perf_counter() - t0) * 1e6)
                e.record()
                e.synchronize()
                dev.append(s.elapsed_time(e))
            print(f"{plan:6s} grad={grad!s:5s} eager {statistics.median(dev):.3f} ms  host {statistics.median(host):.0f} us")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                                    torch.profiler.ProfilerActivity.CPU]) as prof:
                call(grad)
                torch.cuda.synchronize()
            kernels = [ev for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
            if not kernels:
                continue
            t0 = min(k.time_range.start for k in kernels)
            for k in sorted(kernels, key=lambda k: k.time_range.start):
                print(f"   start {k.time_range.start - t0:8.1f} dur {k.time_range.elapsed_us():8.1f}  {k.name[:80]}")
