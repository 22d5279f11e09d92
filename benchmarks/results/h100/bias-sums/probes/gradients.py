"""Strict fp32's split gradients (``gradients.split_gradients``, every gradient asked) as the
tree on PYTHONPATH makes them, device and eager time a call, each checked against float64 first.
Run once per tree, the trees' processes alternated (old new new old), from the repository root::

    PYTHONPATH=TREE/src python3 benchmarks/results/h100/bias-sums/probes/gradients.py LABEL OUT.jsonl

Per layer (theano's LSTM and GRU at batch 128 and 32, hidden 1024, and at batch 128, hidden 512; 30
steps): ``graph`` µs a call replayed from a CUDA graph of 20 calls, ``eager`` µs a call as the
engine times one (events around it, synchronised after), medians of 50 and 200; ``error`` the
largest relative error of the five gradients against float64."""
import json
import sys

import torch

from rnnbench.ops import gradients
from rnnbench.verify import relative_error

LAYERS = [(c, b, h) for h in (1024, 512) for b in ((128, 32) if h == 1024 else (128,)) for c in ("lstm", "gru")]


def inputs(cell, batch, hidden):
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, width = 30 * batch, (4 if cell == "lstm" else 3) * hidden
    draw = lambda *s: torch.randn(*s, generator=gen, device="cuda")  # noqa: E731
    d_gx = draw(rows, width)
    d_gh = d_gx if cell == "lstm" else draw(rows, width)
    return d_gx, d_gh, draw(rows, hidden), draw(rows, hidden), draw(width, hidden) * hidden ** -0.5


def timed(fn, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(calls):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return sorted(samples)[len(samples) // 2]


def main(label, out):
    rows = []
    need = (True,) * 5
    for cell, batch, hidden in LAYERS:
        t = inputs(cell, batch, hidden)
        got = gradients.split_gradients(*t, need)
        wide = [x.double() for x in t]
        wide[1] = wide[0] if t[1] is t[0] else wide[1]
        ref = gradients.reference_gradients(*wide, need)
        error = max(relative_error(getattr(got, f), getattr(ref, f)) for f in ("dx", "dw_ih", "dw_hh", "db_ih", "db_hh"))
        fn = lambda: gradients.split_gradients(*t, need)  # noqa: E731
        for _ in range(3):
            fn()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(20):
                fn()
        graph = timed(g.replay, 50) / 20
        eager = timed(fn, 200)
        row = dict(tree=label, cell=cell, batch=batch, hidden=hidden, graph=graph, eager=eager, error=error)
        rows.append(row)
        print(f"{label} {cell} B{batch} H{hidden}: graph {graph:.1f} µs, eager {eager:.1f} µs, error {error:.2e}",
              flush=True)
    with open(out, "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
