"""Where an on-chip step's time goes (one GPU, a minute or two).

    python benchmarks/on_chip_anatomy.py OUT_DIR [--device cpu]

For each case (cell, batch, hidden, dtype) the on-chip floor (``ops.floor.chain_floor``: one
program per 16 batch rows, h in registers, the resident stacked tile) is timed with its parts
switched on one at a time -- the matmul alone, then the store of ``h_t``, the activation (ours and
the MUFU's ``tanh.approx``), the step's input loaded one or two steps ahead, all of them -- beside
the real forward kernel under its default plan on the same shape. Each is replayed from a CUDA
graph at two sequence lengths, so per step is the difference over the extra steps (no launch, no
prologue); the real kernel also with the exact activations (``plan_override(fast_activations=False)``).
``--device cpu`` (under ``TRITON_INTERPRET=1``) only checks the script: three steps, no
timing worth reading.

Writes ``OUT_DIR/on_chip_anatomy.json`` (environment and rows) and prints a table (µs per step).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import parser  # noqa: E402

# (cell, batch, hidden, dtype): glample-2016's RNN in three dtypes, a narrower RNN, on-chip LSTMs, and an LSTM
# whose 512-row tile the default keeps off chip (the floor says what on chip would cost there).
CASES = [("rnn_tanh", 20, 100, "fp32"), ("rnn_tanh", 20, 100, "tf32"), ("rnn_tanh", 20, 100, "bf16"),
         ("rnn_tanh", 20, 64, "bf16"), ("lstm", 20, 32, "bf16"), ("lstm", 20, 32, "tf32"), ("lstm", 20, 128, "bf16")]
# name -> chain_floor arguments (x: whether the step adds an input); the parts one at a time, then all.
VARIANTS = {
    "matmul": dict(act=0, x=False, store=False),
    "+store": dict(act=0, x=False, store=True),
    "+tanh": dict(act=1, x=False, store=False),
    "+tanh.approx": dict(act=2, x=False, store=False),
    "+x 1 ahead": dict(act=0, x=True, x_ahead=1, store=False),
    "+x 2 ahead": dict(act=0, x=True, x_ahead=2, store=False),
    "all, x 1 ahead": dict(act=1, x=True, x_ahead=1, store=True),
    "all, x 2 ahead": dict(act=1, x=True, x_ahead=2, store=True),
}
CPU_ONLY_SKIPS = {"+tanh.approx"}  # inline PTX: no interpreter


def case_rows(cell: str, batch: int, hidden: int, dtype: str, device: str, lengths: tuple[int, int]) -> dict:
    import torch

    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import dot_precision, on_chip_warps
    from rnnbench.ops.floor import chain_floor
    from rnnbench.precision import TORCH_DTYPE, matmul_mode
    from triton_dev import _graph_ms

    torch_dtype = TORCH_DTYPE[dtype]
    gates = recurrence.NUM_GATES[cell]
    with matmul_mode(dtype):
        precision = dot_precision(torch_dtype)
    warps = on_chip_warps(hidden, gates, precision)
    gen = torch.Generator(device=device).manual_seed(0)
    t_max = max(lengths)
    w = (torch.randn(gates * hidden, hidden, device=device, generator=gen) * hidden ** -0.5).to(torch_dtype)
    x = torch.randn(t_max, batch, hidden, device=device, generator=gen).to(torch_dtype)
    x_proj = torch.randn(t_max, batch, gates * hidden, device=device, generator=gen).to(torch_dtype)
    bias = torch.zeros(gates * hidden, device=device, dtype=torch_dtype)

    def timed(fn) -> float:
        if device == "cpu":
            start = time.perf_counter()
            fn()
            return 1e3 * (time.perf_counter() - start)
        return _graph_ms(fn)

    def per_step_us(make) -> float:
        short, long = (timed(make(n)) for n in lengths)
        return 1e3 * (long - short) / (lengths[1] - lengths[0])

    def floor(args):
        def make(n):
            h_buf = torch.zeros(n + 1, batch, hidden, device=device, dtype=torch_dtype)
            xs = x[:n].contiguous() if args["x"] else None
            kw = {k: v for k, v in args.items() if k != "x"}
            return lambda: chain_floor(h_buf, w, xs, precision=precision, upcast=device == "cpu", num_warps=warps, **kw)
        return make

    def kernel(override):
        def make(n):
            xp = x_proj[:n].contiguous()
            with matmul_mode(dtype), recurrence.plan_override(**override):
                launch = recurrence.layer_launch(cell, batch, hidden, torch_dtype, torch.device(device))
            return lambda: recurrence.recurrence_forward(cell, xp, w, bias, bias, None, None, launch, False)
        return make

    row = {"cell": cell, "batch_size": batch, "hidden_size": hidden, "dtype": dtype, "precision": precision,
           "num_warps": warps, "lengths": list(lengths), "us_per_step": {}}
    for name, args in VARIANTS.items():
        if device == "cpu" and name in CPU_ONLY_SKIPS:
            continue
        row["us_per_step"][name] = per_step_us(floor(args))
    row["us_per_step"]["kernel"] = per_step_us(kernel({}))
    row["us_per_step"]["kernel, exact act"] = per_step_us(kernel({"fast_activations": False}))
    with matmul_mode(dtype):
        launch = recurrence.layer_launch(cell, batch, hidden, torch_dtype, torch.device(device))
    row["kernel_plan"] = launch.forward.__dict__
    return row


def table(rows: list[dict]) -> str:
    names = list(VARIANTS) + ["kernel", "kernel, exact act"]
    lines = ["µs per step (graph replay, difference of two lengths); kernel = the real forward, default plan "
             "(exact act: with fast_activations off)",
             "case | " + " | ".join(names)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['case']} | {r['error']}")
            continue
        cells = [f"{r['us_per_step'][n]:.2f}" if n in r["us_per_step"] else "-" for n in names]
        lines.append(f"{r['cell']} B{r['batch_size']} H{r['hidden_size']} {r['dtype']} ({r['precision']}, "
                     f"{r['num_warps']} warps) | " + " | ".join(cells))
    return "\n".join(lines)


def main() -> int:
    args = parser(__doc__, budget_s=300).parse_args()
    from rnnbench.env import environment

    args.out_dir.mkdir(parents=True, exist_ok=True)
    lengths = (2, 3) if args.device == "cpu" else (30, 90)
    cases = CASES[4:5] if args.device == "cpu" else CASES
    rows, start = [], time.time()
    for cell, batch, hidden, dtype in cases:
        if time.time() - start > args.budget:
            rows.append({"case": f"{cell} B{batch} H{hidden} {dtype}", "error": "skipped: --budget spent"})
            continue
        try:
            rows.append(case_rows(cell, batch, hidden, dtype, args.device, lengths))
        except Exception as exc:  # recorded; the other cases still run
            rows.append({"case": f"{cell} B{batch} H{hidden} {dtype}", "error": f"{type(exc).__name__}: {exc}"[:300]})
        (args.out_dir / "on_chip_anatomy.json").write_text(json.dumps({"env": environment(), "rows": rows}, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
