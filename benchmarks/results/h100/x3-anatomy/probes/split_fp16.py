"""Strict fp32's streamed forward kernels, 3xFP16 (``Plan.split_fp16``, the default) against
3xTF32 from split operands (``split_fp16=False``), and 3xFP16 on 8 warps at 64 batch rows, where
4 spill under Triton 3.9 (LSTM, 104-216 bytes a thread).

    PYTHONPATH=src python3 benchmarks/results/h100/x3-anatomy/probes/split_fp16.py OUT.jsonl [CELL ...]

Each form is checked against float64 first (forward output, no gradients: the largest relative
error), then its forward kernel alone (no saves) is graphed at 32 and 64 steps: per step is the
difference. Forms alternate within each case, A B B A.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

ONLY = sys.argv[2:]  # cells to run (all when none)
CASES = [("lstm", 128, 1024), ("gru", 128, 1024), ("lstm", 32, 1024), ("gru", 32, 1024), ("lstm", 128, 512),
         ("gru", 128, 512), ("lstm", 32, 512), ("gru", 32, 512), ("lstm", 20, 500), ("gru", 256, 512),
         ("lstm", 256, 512), ("rnn_tanh", 20, 500), ("rnn_tanh", 128, 1024), ("rnn_tanh", 20, 256)]
FORMS = {"3xfp16": {}, "3xtf32": {"split_fp16": False}, "3xfp16 8 warps": {"forward_num_warps": 8}}


def error(cell, b, h, override) -> float:
    from rnnbench.ops.naive import naive_layer
    from rnnbench.ops.recurrence import plan_override, recurrent_layer
    from rnnbench.verify import relative_error

    gen = torch.Generator().manual_seed(0)
    from rnnbench.ops.recurrence import NUM_GATES

    g = NUM_GATES[cell]
    u = lambda *s: (torch.rand(s, generator=gen) * 2 - 1) * h ** -0.5  # noqa: E731
    t = [torch.randn(9, b, h, generator=gen), torch.randn(b, h, generator=gen) * 0.5,
         torch.randn(b, h, generator=gen) * 0.5 if cell == "lstm" else None, u(g * h, h), u(g * h, h), u(g * h), u(g * h)]
    with torch.no_grad(), plan_override(**override):
        got = [o for o in recurrent_layer(cell, *[None if x is None else x.cuda() for x in t]) if o is not None]
    with torch.no_grad():
        ref = [o for o in naive_layer(cell, *[None if x is None else x.cuda().double() for x in t]) if o is not None]
    return max(relative_error(a, r) for a, r in zip(got, ref))


def per_step(cell, b, h, override) -> float:
    from rnnbench.ops.recurrence import NUM_GATES, plan_override
    from triton_dev import _graph_ms, _kernel_alone

    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    g = NUM_GATES[cell]
    w_hh = torch.randn(g * h, h, device=dev, generator=gen) * h ** -0.5
    b_ih = torch.randn(g * h, device=dev, generator=gen) * 0.1
    x_proj = torch.randn(64, b, g * h, device=dev, generator=gen)
    with plan_override(**override):
        t = [_graph_ms(_kernel_alone(cell, b, n, h, torch.float32, "tf32x3", x_proj, w_hh, b_ih, b_ih)) for n in (32, 64)]
    return 1e3 * (t[1] - t[0]) / 32


def main() -> int:
    from rnnbench.ops.recurrence import plan
    from rnnbench.precision import matmul_mode

    out = Path(sys.argv[1])
    rows = []
    with matmul_mode("fp32"):
        for cell, b, h in [c for c in CASES if not ONLY or c[0] in ONLY]:
            wide = plan(cell, b, h, torch.float32, torch.device("cuda"), "tf32x3").block_b >= 64
            forms = {k: v for k, v in FORMS.items() if k != "3xfp16 8 warps" or wide}
            errs = {name: error(cell, b, h, o) for name, o in forms.items()}
            times = {name: [] for name in forms}
            order = list(forms) + list(reversed(forms))
            for name in order:
                times[name].append(per_step(cell, b, h, forms[name]))
            for name in forms:
                row = dict(cell=cell, batch=b, hidden=h, form=name, error=errs[name], us_per_step=min(times[name]),
                           runs=times[name])
                rows.append(row)
                print(f"{cell:4s} B{b:<4d} H{h:<5d} {name:15s} {row['us_per_step']:7.2f} us/step  err {row['error']:.2e}",
                      flush=True)
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
