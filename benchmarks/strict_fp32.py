"""Strict fp32 on our kernels: 3xTF32 on tensor cores against IEEE products on FMA units (one GPU).

    python benchmarks/strict_fp32.py OUT_DIR [--budget SECONDS]

For each strict-fp32 case of the seed suites (TF32 off, as rnnbench's ``fp32`` dtype runs), one
``rnnbench.nn`` module runs under ``ops.recurrence.strict_fp32("ieee")`` and under
``strict_fp32("tf32x3")``, beside ``torch.nn`` (cuDNN) on the same weights and inputs:

- accuracy: ‖ours − ref‖ / ‖ref‖ against ``torch.nn`` in float64 on the CPU, for the output, the
  final states and every gradient of the engine's training step (the largest is reported), for
  both modes and for cuDNN;
- time: the forward (no grad) and the training step (forward, MSE over every step and the final
  states, ``torch.autograd.grad`` to the input, the initial states and every weight), timed with
  ``rnnbench.timing.measure`` (synchronised, warmed up, median), the two modes in the order
  A B B A and averaged, so that drift favours neither.

Writes ``OUT_DIR/strict_fp32.jsonl`` (the environment record, then one row per case, as it is
measured) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# (cell, batch_size, seq_len, input_size, hidden_size, num_layers): glample-2016, theano-cudnn-2016,
# fastrnns; smallest first so that a run out of budget keeps the most cases.
CASES = [
    ("rnn_tanh", 20, 30, 100, 100, 1), ("lstm", 20, 30, 100, 100, 1), ("rnn_tanh", 20, 30, 100, 500, 1),
    ("lstm", 20, 30, 100, 500, 1), ("lstm", 32, 30, 128, 128, 1), ("gru", 32, 30, 512, 512, 1),
    ("lstm", 32, 30, 512, 512, 1), ("lstm", 128, 30, 512, 512, 1), ("gru", 128, 30, 1024, 1024, 1),
    ("lstm", 128, 30, 1024, 1024, 1), ("lstm", 64, 100, 512, 512, 1), ("lstm", 128, 200, 512, 512, 3),
]


def _modules(cell, input_size, hidden_size, num_layers):
    import torch

    from rnnbench import nn as ours

    torch.manual_seed(0)
    if cell == "lstm":
        pair = torch.nn.LSTM(input_size, hidden_size, num_layers), ours.LSTM(input_size, hidden_size, num_layers,
                                                                              backend="triton")
    elif cell == "gru":
        pair = torch.nn.GRU(input_size, hidden_size, num_layers), ours.GRU(input_size, hidden_size, num_layers,
                                                                            backend="triton")
    else:
        kind = cell.removeprefix("rnn_")
        pair = (torch.nn.RNN(input_size, hidden_size, num_layers, nonlinearity=kind),
                ours.RNN(input_size, hidden_size, num_layers, nonlinearity=kind, backend="triton"))
    pair[1].load_state_dict(pair[0].state_dict())
    return pair


def _step(module, x, h0, c0, target):
    """(forward, train) callables of the engine's two modes on ``module``."""
    import torch

    lstm = c0 is not None
    leaves = [x, h0, c0] if lstm else [x, h0]
    params = list(module.parameters())

    def run():
        out, hn = module(x, (h0, c0) if lstm else h0)
        return out, (hn if lstm else (hn,))

    def forward():
        with torch.no_grad():
            return run()

    def train():
        out, finals = run()
        loss = ((out - target) ** 2).mean() + sum((f ** 2).mean() for f in finals)
        return (out, *finals, *torch.autograd.grad(loss, [*leaves, *params]))

    return forward, train


def _inputs(cell, b, t, i, h, layers, device, dtype):
    import torch

    gen = torch.Generator().manual_seed(1)
    make = lambda *shape: torch.randn(*shape, generator=gen).to(device=device, dtype=dtype)  # noqa: E731
    x, h0 = make(t, b, i), make(layers, b, h)
    c0 = make(layers, b, h) if cell == "lstm" else None
    target = make(t, b, h)
    for v in (x, h0, c0):
        if v is not None:
            v.requires_grad_(True)
    return x, h0, c0, target


def _max_rel_error(values, reference) -> float:
    from rnnbench.verify import relative_error

    return max(relative_error(v.cpu(), r) for v, r in zip(values, reference))


def measure_case(cell, b, t, i, h, layers, budget_s, device="cuda") -> dict:
    import torch

    from rnnbench.ops.recurrence import strict_fp32
    from rnnbench.precision import matmul_mode
    from rnnbench.timing import measure

    row = dict(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, num_layers=layers)
    cudnn, triton_module = (m.to(device) for m in _modules(cell, i, h, layers))
    reference = _modules(cell, i, h, layers)[0].double()
    ref_inputs = _inputs(cell, b, t, i, h, layers, "cpu", torch.float64)
    reference_out = _step(reference, *ref_inputs)[1]()
    inputs = _inputs(cell, b, t, i, h, layers, device, torch.float32)
    with matmul_mode("fp32"):
        steps = {"torch-nn": _step(cudnn, *inputs)}
        row["error_torch-nn"] = _max_rel_error(steps["torch-nn"][1](), reference_out)
        for mode in ("ieee", "tf32x3"):
            with strict_fp32(mode):
                fwd, train = _step(triton_module, *inputs)
                row[f"error_{mode}"] = _max_rel_error(train(), reference_out)
            steps[mode] = (fwd, train)
        for which, index in (("forward", 0), ("train", 1)):
            row[f"{which}_ms_torch-nn"] = measure(steps["torch-nn"][index], device, budget_s=budget_s).median_ms
            times = {"ieee": [], "tf32x3": []}
            for mode in ("ieee", "tf32x3", "tf32x3", "ieee"):
                with strict_fp32(mode):
                    times[mode].append(measure(steps[mode][index], device, budget_s=budget_s).median_ms)
            for mode, ms in times.items():
                row[f"{which}_ms_{mode}"] = sum(ms) / len(ms)
    return row


def _table(rows: list[dict]) -> str:
    head = ("case | error cuDNN | error ieee | error 3xTF32 | forward ms cuDNN / ieee / 3xTF32 | "
            "train ms cuDNN / ieee / 3xTF32 | 3xTF32 vs ieee fwd, train | vs cuDNN fwd, train")
    lines = [head, " | ".join("---" for _ in head.split(" | "))]
    for r in rows:
        case = f"{r['cell']} B{r['batch_size']} T{r['seq_len']} I{r['input_size']} H{r['hidden_size']} L{r['num_layers']}"
        if "error" in r:
            lines.append(f"{case} | {r['error']}")
            continue
        f = [r[f"forward_ms_{k}"] for k in ("torch-nn", "ieee", "tf32x3")]
        t = [r[f"train_ms_{k}"] for k in ("torch-nn", "ieee", "tf32x3")]
        lines.append(f"{case} | {r['error_torch-nn']:.1e} | {r['error_ieee']:.1e} | {r['error_tf32x3']:.1e} | "
                     f"{f[0]:.3f} / {f[1]:.3f} / {f[2]:.3f} | {t[0]:.3f} / {t[1]:.3f} / {t[2]:.3f} | "
                     f"{f[1] / f[2]:.2f}x, {t[1] / t[2]:.2f}x | {f[0] / f[2]:.2f}x, {t[0] / t[2]:.2f}x")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--budget", type=float, default=240.0, help="seconds for the whole run")
    parser.add_argument("--case-budget", type=float, default=0.2, help="seconds per timed measurement")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                        help="cpu only checks this script (TRITON_INTERPRET=1)")
    parser.add_argument("--cases", type=int, default=len(CASES), help="the first N cases")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    from rnnbench.env import environment

    rows, start = [], time.monotonic()
    with open(args.out_dir / "strict_fp32.jsonl", "a") as out:
        out.write(json.dumps({"record": "env", **environment()}) + "\n")  # the machine the rows ran on
        for case in CASES[: args.cases]:
            if time.monotonic() - start > args.budget:
                print(f"budget spent: skipped {case}", flush=True)
                continue
            try:
                row = measure_case(*case, args.case_budget, args.device)
            except Exception as err:  # record the case and go on
                row = dict(zip(("cell", "batch_size", "seq_len", "input_size", "hidden_size", "num_layers"), case),
                           error=f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
