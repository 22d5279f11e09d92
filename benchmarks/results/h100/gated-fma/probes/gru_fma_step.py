"""The GRU's forward kernel on FMA units (``ops/gru/fma.py``) alone, per step: how many chunks of k
each gate keeps in registers (variant ``fmaN``: N chunks, ``gluon_fma.REG_VALUES = 3 * N * CHUNK``),
against the tensor-core on-chip forward (``tc``).

Each variant's kernel (``recurrence_forward``, the projection made beforehand, no saving) is
captured in a CUDA graph at 30 and at 300 steps; a figure is the median of synchronised replays
(the package's clock, ``rnnbench.timing.time_call``), the variants timed in turns, in the order A B
B A. The time a step is the slope between 30 and 300 steps (the replay's fixed costs cancel).

    PYTHONPATH=src python3 benchmarks/results/h100/gru-fma/probes/gru_fma_step.py OUT_DIR

Writes ``OUT_DIR/gru_fma_step.jsonl`` (an environment record, then one record per case and variant)
and prints a table.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

# (dtype, batch, hidden); every variant is timed on each
CASES = [("fp32", 32, 128), ("fp32", 128, 128), ("fp32", 20, 100), ("tf32", 32, 128)]
VARIANTS = ["tc", "fma0", "fma4", "fma6", "fma8"]


def graphed(fn):
    """``fn`` captured in a CUDA graph: a call replays it (and keeps ``fn``'s tensors alive)."""
    import torch

    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()

    def replay(fn=fn):
        g.replay()
    return replay


def kernel_call(dtype, batch, hidden, steps, variant):
    """A zero-argument call of the forward kernel alone under ``variant``, and its plan's meta."""
    import torch
    from torch.nn import functional as F

    from rnnbench.ops import gluon_fma, recurrence
    from rnnbench.precision import TORCH_DTYPE

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(steps, batch, hidden, generator=gen)
    w_ih, w_hh = [(torch.rand(3 * hidden, hidden, generator=gen) - 0.5) * hidden ** -0.5 for _ in range(2)]
    b = torch.rand(3 * hidden, generator=gen) * 0.1
    x, w_ih, w_hh, b = [t.to("cuda", TORCH_DTYPE[dtype]) for t in (x, w_ih, w_hh, b)]
    h0 = torch.zeros(batch, hidden, device="cuda", dtype=TORCH_DTYPE[dtype])
    gluon_fma.REG_VALUES = 3 * gluon_fma.CHUNK * (int(variant[3:]) if variant.startswith("fma") else 0)
    for cache in (recurrence._cached_launch, recurrence._cached_plan, recurrence._cached_choice,
                  recurrence._cached_refusal):
        cache.cache_clear()
    with recurrence.plan_override(forward_fma=variant != "tc"):
        launch = recurrence.layer_launch("gru", batch, hidden, TORCH_DTYPE[dtype], x.device)
    x_proj = F.linear(x, w_ih)
    fn = lambda: recurrence.recurrence_forward("gru", x_proj, w_hh, b, b, h0, None, launch, False)  # noqa: E731
    return graphed(fn), dict(launch.forward_meta)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        parser.exit(2, "gru_fma_step.py: needs a CUDA device\n")
    from rnnbench.env import environment
    from rnnbench.timing import time_call

    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = (args.out_dir / "gru_fma_step.jsonl").open("w")
    out.write(json.dumps({"record": "env", **environment()}) + "\n")
    print("case | variant | 30 steps ms | 300 steps ms | us a step | meta")
    for dtype, batch, hidden in CASES:
        calls = {(v, s): kernel_call(dtype, batch, hidden, s, v) for v in VARIANTS for s in (30, 300)}
        times = {k: [] for k in calls}
        for order in (VARIANTS, VARIANTS[::-1], VARIANTS[::-1], VARIANTS):
            for v in order:
                for s in (30, 300):
                    replay = calls[(v, s)][0]
                    times[(v, s)] += [time_call(replay, "cuda")[1] for _ in range(args.reps)]
        for v in VARIANTS:
            t30, t300 = statistics.median(times[(v, 30)]), statistics.median(times[(v, 300)])
            step_us = (t300 - t30) / 270 * 1000
            rec = {"dtype": dtype, "batch_size": batch, "hidden_size": hidden, "variant": v, "ms_30": t30,
                   "ms_300": t300, "us_per_step": step_us, "forward_meta": calls[(v, 30)][1]}
            out.write(json.dumps(rec) + "\n")
            print(f"gru B{batch} H{hidden} {dtype} | {v} | {t30:.4f} | {t300:.4f} | {step_us:.3f} | "
                  f"{calls[(v, 30)][1].get('REG_CHUNKS', '-')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
