"""Probe: the module's eager call from two source trees in one process, A B B A over many rounds
(host load moves by half between processes on the device's host; within one process the rounds
share it). The old tree is imported as the package ``rnnbench_old`` (a copy of its
src/rnnbench under OLD_PKG_DIR; the package imports itself relatively).

    PYTHONPATH=src python3 THIS OLD_PKG_DIR

Per case (the initial states given, as the engine gives them): host µs per eager no-grad forward (no synchronisation inside the timed call), µs per
forward and per training step synchronised before and after (as the engine times), each the
median over rounds of per-round medians, and new/old."""
import importlib, statistics, sys, time
import torch

sys.path.insert(0, "src")
sys.path.insert(0, sys.argv[1])
new_nn = importlib.import_module("rnnbench.nn")
old_nn = importlib.import_module("rnnbench_old.nn")
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
         ("gru", 128, 128, torch.float32), ("lstm", 128, 128, torch.float32), ("lstm", 32, 512, torch.bfloat16)]
print("case | fwd host old | new | new/old | fwd sync old | new | new/old | train sync old | new | new/old")
for cell, b, h, dt in cases:
    x = torch.randn(30, b, h, device="cuda", dtype=dt, requires_grad=True)
    h0 = torch.randn(1, b, h, device="cuda", dtype=dt, requires_grad=True)  # states given, as the engine does
    hx = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
    mods = {}
    for name, nn_ in (("old", old_nn), ("new", new_nn)):
        cls = {"lstm": nn_.LSTM, "gru": nn_.GRU}.get(cell, nn_.RNN)
        torch.manual_seed(0)
        mods[name] = cls(h, h, backend="triton").to("cuda", dt)
    steps = {}
    for name, m in mods.items():
        def fwd(m=m):
            with torch.no_grad():
                return m(x, hx)
        def train(m=m):
            out, _ = m(x, hx)
            return torch.autograd.grad(out.float().square().sum(), [x, h0, *m.parameters()])
        steps[name] = (fwd, train)
        fwd(); train(); fwd(); train()
    res = {(k, n): [] for k in ("fh", "fs", "ts") for n in ("old", "new")}
    for r in range(ROUNDS):
        for name in (("old", "new", "new", "old") if r % 2 == 0 else ("new", "old", "old", "new")):
            fwd, train = steps[name]
            res[("fh", name)].append(host_us(fwd))
            res[("fs", name)].append(sync_us(fwd))
            res[("ts", name)].append(sync_us(train))
    med = {k: statistics.median(v) for k, v in res.items()}
    cols = []
    for k in ("fh", "fs", "ts"):
        cols += [f"{med[(k, 'old')]:.1f}", f"{med[(k, 'new')]:.1f}", f"{med[(k, 'new')] / med[(k, 'old')]:.2f}"]
    print(f"{cell} B{b} H{h} {str(dt)[6:]} | " + " | ".join(cols), flush=True)
