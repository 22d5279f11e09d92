"""Why FlashRNN's LSTM forward (batch 16, seq 1024, hidden 768) takes longer in fp16 than in bf16 on
the H100 (seed runs at fa1ecbf and c12cd7f: eager 2.637 / 2.665 against 2.520 / 2.503 ms): its
pieces timed in turns, fp16 and bf16 side by side in one process. Each figure is the median of
synchronised calls (CUDA events), in ms:

- ``linear``: the input projection as the eager forward runs it (``F.linear``, cuBLAS);
- ``kernel``: the recurrence kernel alone on a projection made beforehand (``recurrence_forward``);
- ``layer``: the whole layer forward under ``no_grad`` (``recurrent_layer``), as the engine's
  eager forward calls it.

    PYTHONPATH=src python3 benchmarks/results/h100/fma-rnn/probes/lstm_fp16_bf16.py OUT_DIR

Writes ``OUT_DIR/lstm_fp16_bf16.jsonl`` (an environment record, then one record per piece and dtype).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path


def timed(fn, reps):
    """``reps`` synchronised calls of ``fn``, ms each (the package's clock, ``rnnbench.timing``)."""
    from rnnbench.timing import time_call

    return [time_call(fn, "cuda")[1] for _ in range(reps)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        parser.exit(2, "lstm_fp16_bf16.py: needs a CUDA device\n")
    from torch.nn import functional as F

    from rnnbench.env import environment
    from rnnbench.ops import recurrence

    T, B, H = 1024, 16, 768
    gen = torch.Generator().manual_seed(0)
    base = [torch.randn(T, B, H, generator=gen), (torch.rand(4 * H, H, generator=gen) - 0.5) * H ** -0.5,
            (torch.rand(4 * H, H, generator=gen) - 0.5) * H ** -0.5, torch.rand(4 * H, generator=gen) * 0.1]
    pieces = {}
    for dtype in (torch.float16, torch.bfloat16):
        x, w_ih, w_hh, b = [t.to("cuda", dtype) for t in base]
        launch = recurrence.layer_launch("lstm", B, H, dtype, x.device)
        x_proj = F.linear(x, w_ih)
        name = str(dtype).removeprefix("torch.")
        pieces[name] = {
            "linear": lambda x=x, w=w_ih: F.linear(x, w),
            "kernel": lambda xp=x_proj, w=w_hh, b=b, lc=launch: recurrence.recurrence_forward(
                "lstm", xp, w, b, b, None, None, lc, False),
            "layer": lambda x=x, wi=w_ih, wh=w_hh, b=b: recurrence.recurrent_layer("lstm", x, None, None, wi, wh, b, b),
        }
    times = {(d, p): [] for d in pieces for p in pieces[d]}
    with torch.no_grad():
        for d in pieces:
            for p, fn in pieces[d].items():
                timed(fn, 3)  # compile, warm up
        for _ in range(args.turns):
            for d in pieces:
                for p, fn in pieces[d].items():
                    times[(d, p)] += timed(fn, args.reps)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with open(args.out_dir / "lstm_fp16_bf16.jsonl", "w") as out:
        out.write(json.dumps({"record": "env", **environment()}) + "\n")
        for (d, p), t in times.items():
            out.write(json.dumps({"record": "piece", "dtype": d, "piece": p, "median_ms": statistics.median(t),
                                  "p20_ms": sorted(t)[len(t) // 5], "p80_ms": sorted(t)[4 * len(t) // 5],
                                  "runs": len(t)}) + "\n")
            print(f"{d:9s} {p:7s} {statistics.median(t):.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
