"""Probe: does our eager forward at FlashRNN's fp16 shape slow down over a process's calls?

    PYTHONPATH=src python3 THIS OUT_DIR

Why: engine_step.py saw the engine's step at 2.54 ms at first and 2.60-2.65 ms after a few hundred
calls, torch.nn's steady at 2.22. Here: 3000 calls of our module (batch 16, 1024 steps, hidden 768,
fp16, initial states given), timed as the engine times them, reported as the median of each block of
100; then the same with the counters the Gluon forward takes made fresh each call (``torch.zeros``)
instead of a slice of the counter pool (``launch.counted_counters``, whose slices walk through a 16
KB buffer and wrap after 1024 calls); then torch.nn's module, as a control. Writes
OUT_DIR/drift.txt."""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402
from rnnbench.ops import launch, recurrence  # noqa: E402
from rnnbench.timing import RunCounts, sample  # noqa: E402

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
lines = []


def say(text):
    lines.append(text)
    print(text, flush=True)


def blocks(m, x, hx, n=30, size=100):
    with torch.no_grad():
        fn = lambda: m(x, hx)  # noqa: E731
        fn()
        return [statistics.median(sample(fn, "cuda", budget_s=0.0, runs=RunCounts(size, size))) for _ in range(n)]


torch.manual_seed(0)
x = torch.randn(1024, 16, 768, device="cuda", dtype=torch.float16)
hx = tuple(torch.randn(1, 16, 768, device="cuda", dtype=torch.float16) for _ in range(2))
variants = [("ours, pool", lambda: ours.LSTM(768, 768, backend="triton"), False),
            ("ours, fresh counters", lambda: ours.LSTM(768, 768, backend="triton"), True),
            ("torch.nn", lambda: torch.nn.LSTM(768, 768), False)]
pooled = recurrence._counted_counters
for name, build, fresh in variants:
    recurrence._counted_counters = (lambda count, dev: torch.zeros(count, dtype=torch.int32, device=dev)) if fresh \
        else pooled
    m = build().to("cuda", torch.float16)
    b = blocks(m, x, hx)
    say(f"{name}: medians of 100 calls, in order: {' '.join(f'{v:.3f}' for v in b)}")
    del m
recurrence._counted_counters = pooled
say(f"pools: {[(k[1], p.free, p.buffer.numel(), len(p._slices)) for k, p in launch.POOLS.items()]}")
(OUT / "drift.txt").write_text("\n".join(lines) + "\n")
