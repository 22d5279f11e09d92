"""Host time of one eager LSTM layer forward at FlashRNN's shape (batch 16, seq 1024, hidden 768,
fp16, no_grad): each piece timed alone with perf_counter (median of 200 calls, the GPU kept busy
behind so no call waits for it), then cProfile of 200 whole calls (top functions by own time).

    PYTHONPATH=src python3 benchmarks/results/h200/input-ahead/probes/host.py
"""
import cProfile
import pstats
import statistics
import time

import torch

from rnnbench.ops import recurrence
from rnnbench.ops.projection import input_projection
from rnnbench.ops.recurrence import recurrent_layer, recurrence_forward

B, T, H = 16, 1024, 768
dt = torch.float16
x = torch.randn(T, B, H, device="cuda", dtype=dt)
w_ih = (torch.rand(4 * H, H, device="cuda") * 2 - 1).mul(H ** -0.5).to(dt)
w_hh = (torch.rand(4 * H, H, device="cuda") * 2 - 1).mul(H ** -0.5).to(dt)
b_ih = torch.zeros(4 * H, device="cuda", dtype=dt)
b_hh = torch.zeros(4 * H, device="cuda", dtype=dt)
launch = recurrence.layer_launch("lstm", B, H, dt, x.device)
x_proj = input_projection(x, w_ih, launch.precision, launch.upcast)


def host_us(fn, n=200):
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # the GPU busy for the whole loop: no call waits for it
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(out)


def _first():
    with recurrence.plan_override(forward_input_ahead=False):
        recurrent_layer("lstm", x, None, None, w_ih, w_hh, b_ih, b_hh)


with torch.no_grad():
    pieces = {
        "recurrent_layer (whole call)": lambda: recurrent_layer("lstm", x, None, None, w_ih, w_hh, b_ih, b_hh),
        "recurrent_layer (projection first)": lambda: _first(),
        "input_projection": lambda: input_projection(x, w_ih, launch.precision, launch.upcast),
        "recurrence_forward": lambda: recurrence_forward("lstm", x_proj, w_hh, b_ih, b_hh, None, None, launch, False),
        "layer_launch": lambda: recurrence.layer_launch("lstm", B, H, dt, x.device),
        "torch.empty": lambda: torch.empty(T + 1, B, H, device="cuda", dtype=dt),
        "torch.zeros(1 int32)": lambda: torch.zeros(1, device="cuda", dtype=torch.int32),
        "F.linear": lambda: torch.nn.functional.linear(x, w_ih),
    }
    for name, fn in pieces.items():
        print(f"{name:32s} {host_us(fn, 50 if 'recurren' in name else 200):8.1f} us")
    torch.cuda._sleep(2_000_000_000)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(100):
        recurrent_layer("lstm", x, None, None, w_ih, w_hh, b_ih, b_hh)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(22)
