"""Probe: FlashRNN's fp16 LSTM forward with the input projection ahead, eagerly, on a side stream
queued after the recurrence's launch (not wired into the package).

    PYTHONPATH=src python3 THIS OUT_DIR

Why: our eager call is the host's 80 µs, the projection's 112 and the recurrence's 2330 one after
another (flash_dtypes.py); cuDNN's 0.9x needs about 90 µs off. The package projects ahead only in
CUDA graphs (recurrence.projects_ahead): eagerly, chunks queued on a side stream before the kernel's
launch added host time before it (results/h200/input-ahead). Here the first 32 steps are projected
on the current stream, the recurrence (the Gluon kernel, reading step t once a counter of the steps
written passes t) is launched next, and only then are the other chunks (32-128, 128-1024) queued on a
side stream behind an event, with the counter raised after each. Every chunk's cuBLAS kernel runs
once before (a kernel loaded while the recurrence waits for it hung: results/h200/input-ahead).

The module's eager forward (``module``), this call (``ahead``) and torch.nn's fp16 module, each timed
as the engine times (median of 30 after warm-up), in the order module, ahead, ahead, module, torch.nn,
three times; the output of ``ahead`` against the module's. Writes OUT_DIR/eager_ahead.txt."""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402
from rnnbench.ops import recurrence  # noqa: E402
from rnnbench.timing import RunCounts, sample  # noqa: E402

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
T, B, H = 1024, 16, 768
FIRST, CHUNKS = 32, ((32, 128), (128, 1024))
lines = []


def say(text):
    lines.append(text)
    print(text, flush=True)


torch.manual_seed(0)
dev = torch.device("cuda")
module = ours.LSTM(H, H, backend="triton").to(dev, torch.float16)
cudnn = torch.nn.LSTM(H, H).to(dev, torch.float16)
x = torch.randn(T, B, H, device=dev, dtype=torch.float16)
hx = tuple(torch.randn(1, B, H, device=dev, dtype=torch.float16) for _ in range(2))
w_ih, w_hh, b_ih, b_hh = (module.weight_ih_l0, module.weight_hh_l0, module.bias_ih_l0, module.bias_hh_l0)
launch = recurrence.layer_launch("lstm", B, H, torch.float16, dev)
assert launch.forward.gluon, launch.forward
side = torch.cuda.Stream(dev)
rows, w_t = x.view(T * B, H), w_ih.t()
with torch.no_grad():  # load every chunk's kernel before any overlaps the recurrence
    scratch = torch.empty(T * B, 4 * H, device=dev, dtype=torch.float16)
    for start, end in ((0, FIRST), *CHUNKS):
        torch.mm(rows[start * B:end * B], w_t, out=scratch[start * B:end * B])
        with torch.cuda.stream(side):
            torch.mm(rows[start * B:end * B], w_t, out=scratch[start * B:end * B])
    torch.cuda.synchronize()


def ahead():
    main = torch.cuda.current_stream(dev)
    x_proj = torch.empty(T, B, 4 * H, device=dev, dtype=torch.float16)
    out = x_proj.view(T * B, 4 * H)
    ready = torch.zeros(1, device=dev, dtype=torch.int32)
    torch.mm(rows[:FIRST * B], w_t, out=out[:FIRST * B])
    ready.fill_(FIRST)
    queued = torch.cuda.Event()
    queued.record(main)
    h_buf, h_n, c_n, _, _ = recurrence.recurrence_forward("lstm", x_proj, w_hh, b_ih, b_hh, hx[0], hx[1], launch,
                                                          False, None, ready)
    with torch.cuda.stream(side):
        side.wait_event(queued)
        for start, end in CHUNKS:
            torch.mm(rows[start * B:end * B], w_t, out=out[start * B:end * B])
            ready.fill_(end)
    main.wait_stream(side)
    x_proj.record_stream(side)
    return h_buf[1:], h_n, c_n


def timed(fn):
    with torch.no_grad():
        for _ in range(3):
            fn()
        return statistics.median(sample(fn, "cuda", budget_s=0.0, runs=RunCounts(30, 30)))


with torch.no_grad():
    ref, got = module(x, hx)[0], ahead()[0]
    torch.cuda.synchronize()
    say(f"ahead's output against the module's: max |diff| {(ref.float() - got.float()).abs().max().item():.3g}")
    results = {"module": [], "ahead": [], "torch.nn": []}
    for _ in range(3):
        for name, fn in (("module", lambda: module(x, hx)), ("ahead", ahead), ("ahead", ahead),
                         ("module", lambda: module(x, hx)), ("torch.nn", lambda: cudnn(x, hx))):
            results[name].append(timed(fn))
    for name, ms in results.items():
        say(f"{name}: {' '.join(f'{m:.4f}' for m in ms)} ms (median {statistics.median(ms):.4f})")
    say(f"torch.nn / ahead: {statistics.median(results['torch.nn']) / statistics.median(results['ahead']):.3f}; "
        f"torch.nn / module: {statistics.median(results['torch.nn']) / statistics.median(results['module']):.3f}")
(OUT / "eager_ahead.txt").write_text("\n".join(lines) + "\n")
