"""Probe: the module's eager call with the cached launch through Triton's Python runner (A) and
calling Triton 3.6's C launcher itself (B, ``ops/launch.DIRECT_LAUNCH``), in one process, A B B A
over 12 rounds (the device's host load moves by half between processes; within one the rounds
share it).

    PYTHONPATH=src python3 THIS

Per case (initial states given, as the engine gives them): host µs per eager no-grad forward (no
synchronisation inside the timed call), µs per forward and per training step synchronised before
and after (as the engine times), each the median over rounds of per-round medians, and B/A."""
import statistics, sys, time
import torch

sys.path.insert(0, "src")
from rnnbench import nn as ours  # noqa: E402
from rnnbench.ops import launch  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
ROUNDS, CALLS = 12, 60


def host_us(fn):
    ts = []
    for i in range(CALLS):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
        if i % 10 == 9:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return 1e6 * statistics.median(ts)


def sync_us(fn):
    ts = []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        t = time.perf_counter(); fn(); torch.cuda.synchronize(); ts.append(time.perf_counter() - t)
    return 1e6 * statistics.median(ts)


cases = [("rnn_tanh", 20, 100, torch.float32), ("lstm", 20, 100, torch.float32), ("gru", 32, 128, torch.float32),
         ("lstm", 32, 128, torch.float32), ("lstm", 32, 512, torch.bfloat16), ("gru", 128, 512, torch.bfloat16)]
print("case | fwd host runner | direct | B/A | fwd sync runner | direct | B/A | train sync runner | direct | B/A")
for cell, b, h, dt in cases:
    x = torch.randn(30, b, h, device="cuda", dtype=dt, requires_grad=True)
    h0 = torch.randn(1, b, h, device="cuda", dtype=dt, requires_grad=True)
    hx = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
    torch.manual_seed(0)
    m = {"lstm": ours.LSTM, "gru": ours.GRU}.get(cell, ours.RNN)(h, h, backend="triton").to("cuda", dt)

    def fwd():
        with torch.no_grad():
            return m(x, hx)

    def train():
        out, _ = m(x, hx)
        return torch.autograd.grad(out.float().square().sum(), [x, h0, *m.parameters()])

    for direct in (False, True, False, True):
        launch.DIRECT_LAUNCH = direct
        fwd(); train()
    res = {(k, n): [] for k in ("fh", "fs", "ts") for n in ("runner", "direct")}
    for r in range(ROUNDS):
        for name in (("runner", "direct", "direct", "runner") if r % 2 == 0 else ("direct", "runner", "runner", "direct")):
            launch.DIRECT_LAUNCH = name == "direct"
            res[("fh", name)].append(host_us(fwd))
            res[("fs", name)].append(sync_us(fwd))
            res[("ts", name)].append(sync_us(train))
    launch.DIRECT_LAUNCH = True
    med = {k: statistics.median(v) for k, v in res.items()}
    cols = []
    for k in ("fh", "fs", "ts"):
        cols += [f"{med[(k, 'runner')]:.1f}", f"{med[(k, 'direct')]:.1f}", f"{med[(k, 'direct')] / med[(k, 'runner')]:.2f}"]
    print(f"{cell} B{b} H{h} {str(dt)[6:]} | " + " | ".join(cols), flush=True)
