"""Probe: host µs of the input projection as F.linear (one call) against reshape + t + mm + view,
alone and inside the module's eager no-grad forward (F.linear in recurrence patched to the mm
form), A B B A in one process. Run from the repo root: PYTHONPATH=src python3 THIS."""
import statistics, sys, time
import torch
from torch.nn import functional as F
sys.path.insert(0, "src")
from rnnbench import nn as rnn
from rnnbench.ops import recurrence

torch.backends.cuda.matmul.allow_tf32 = False


def host_us(fn, n=400):
    for _ in range(30):
        fn()
    torch.cuda.synchronize()
    ts = []
    for i in range(n):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
        if i % 10 == 9:
            torch.cuda.synchronize()
    return 1e6 * statistics.median(ts)


def mm_linear(x, w):
    T, B, _ = x.shape
    return torch.mm(x.reshape(T * B, -1), w.t()).view(T, B, -1)


class Patched:
    """recurrence.F with linear swapped for the mm form."""
    def __getattr__(self, name):
        return mm_linear if name == "linear" else getattr(F, name)


cases = [("lstm", 20, 100, torch.float32), ("gru", 32, 128, torch.float32), ("rnn_tanh", 20, 100, torch.float32),
         ("lstm", 32, 512, torch.bfloat16)]
for cell, b, h, dt in cases:
    g = {"lstm": 4, "gru": 3}.get(cell, 1)
    x = torch.randn(30, b, h, device="cuda", dtype=dt)
    w = torch.randn(g * h, h, device="cuda", dtype=dt)
    mod = {"lstm": rnn.LSTM, "gru": rnn.GRU}.get(cell, rnn.RNN)(h, h, backend="triton").to("cuda", dt)
    def fwd():
        with torch.no_grad():
            return mod(x)
    res = {"linear": [], "mm": [], "module linear": [], "module mm": []}
    for order in ("AB", "BA"):
        for which in order:
            if which == "A":
                res["linear"].append(host_us(lambda: F.linear(x, w)))
                recurrence.F = F
                res["module linear"].append(host_us(fwd))
            else:
                res["mm"].append(host_us(lambda: mm_linear(x, w)))
                recurrence.F = Patched()
                res["module mm"].append(host_us(fwd))
    recurrence.F = F
    print(f"{cell} B{b} H{h} {dt}: " + "  ".join(f"{k} {sum(v)/len(v):.1f}" for k, v in res.items()), flush=True)
