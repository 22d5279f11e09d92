"""Probe: the graphed forward (projection and recurrence, no host time) of two source trees in
one process, A B B A over rounds, each checked against float64 first.

    PYTHONPATH=src python3 THIS OLD_PKG_DIR [CASE_INDEX ...]

OLD_PKG_DIR holds the old tree's src/rnnbench copied as the package ``rnnbench_old`` (it imports
itself relatively). Per case: the largest relative error of the output and final states against
torch.nn in float64 on the same weights (old, new), ms per replayed forward for each tree (the
median over rounds of per-round means of 20 replays) and new/old."""
import importlib, statistics, sys
import torch

sys.path.insert(0, "src")
sys.path.insert(0, sys.argv[1])
import os  # noqa: E402
trees = {"old": importlib.import_module("rnnbench_old.nn"), "new": importlib.import_module("rnnbench.nn")}
trees = {k: v for k, v in trees.items() if k in os.environ.get("TREES", "old,new").split(",")}  # (debugging)
ROUNDS, REPLAYS = 10, 20
DT = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CASES = [("lstm", 16, 1024, 768, "fp16"), ("lstm", 16, 1024, 768, "bf16"), ("lstm", 32, 30, 512, "bf16"),
         ("gru", 32, 30, 512, "bf16"), ("lstm", 128, 30, 512, "bf16"), ("lstm", 20, 30, 500, "bf16"),
         ("lstm", 32, 30, 1024, "bf16"), ("lstm", 32, 30, 128, "fp32"), ("gru", 32, 30, 128, "fp32"),
         ("lstm", 20, 30, 100, "fp32"), ("gru", 128, 30, 128, "fp32"), ("lstm", 32, 30, 512, "tf32"),
         ("lstm", 128, 30, 512, "tf32"), ("gru", 32, 30, 128, "bf16")]
chosen = [CASES[int(k)] for k in sys.argv[2:]] or CASES


def rel(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


print("case | error old | error new | ms old | ms new | new/old", flush=True)
for cell, b, t, h, dt in chosen:
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = dt == "tf32"
    torch.manual_seed(0)
    x = torch.randn(t, b, h, device="cuda", dtype=DT[dt])
    h0 = torch.randn(1, b, h, device="cuda", dtype=DT[dt])
    hx = (h0, torch.randn_like(h0)) if cell == "lstm" else h0
    torch.manual_seed(1)
    ref = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(cell, torch.nn.RNN)(h, h).cuda().to(DT[dt])
    ref64 = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(cell, torch.nn.RNN)(h, h).cuda().double()
    ref64.load_state_dict({k: v.double() for k, v in ref.state_dict().items()})
    with torch.no_grad():
        want = ref64(x.double(), tuple(s.double() for s in hx) if cell == "lstm" else hx.double())
    want = [want[0], *(want[1] if cell == "lstm" else (want[1],))]
    replays, errors = {}, {}
    for name, nn_ in trees.items():
        m = {"lstm": nn_.LSTM, "gru": nn_.GRU}.get(cell, nn_.RNN)(h, h, backend="triton").cuda().to(DT[dt])
        m.load_state_dict(ref.state_dict())
        with torch.no_grad():
            out = m(x, hx)
        got = [out[0], *(out[1] if cell == "lstm" else (out[1],))]
        errors[name] = max(rel(g, w) for g, w in zip(got, want))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                m(x, hx)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g), torch.no_grad():
            m(x, hx)
        replays[name] = (g, m)  # the module outlives its graph's replays (they read its weights)
    times = {n: [] for n in trees}
    for r in range(ROUNDS):
        names = list(trees)
        for name in (names + names[::-1] if r % 2 == 0 else names[::-1] + names):
            g = replays[name][0]
            g.replay()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(REPLAYS):
                g.replay()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / REPLAYS)
    med = {n: statistics.median(v) for n, v in times.items()}
    if len(trees) < 2:
        print(cell, b, t, h, dt, errors, med, flush=True)
        continue
    print(f"{cell} B{b} T{t} H{h} {dt} | {errors['old']:.2e} | {errors['new']:.2e} | {med['old']:.4f} | "
          f"{med['new']:.4f} | {med['new'] / med['old']:.3f}", flush=True)
