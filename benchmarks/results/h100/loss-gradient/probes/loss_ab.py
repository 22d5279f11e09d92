"""The engine's training step as it was (the loss computed and differentiated through autograd)
against the step of now (the backward seeded with the loss's gradient,
``rnnbench.workload.loss_gradient``), for ``torch-nn`` and ``triton``, A B B A in one process (one GPU).

    PYTHONPATH=src:benchmarks python3 benchmarks/results/h100/loss-gradient/probes/loss_ab.py OUT_DIR

Both steps of a lane share its module and inputs (``workload.module_call``'s step for B; A the same
closure with the loss of before, written out here); each is checked against the float64
reference first (``verify.compare``, the engine's tolerance). Per case: each step's median ms (the
engine's warm-up and timed runs, ``ab.in_turns``), B/A per lane, and the triton/torch-nn ratio
either way. Writes ``OUT_DIR/ab.jsonl`` (an environment record first) and prints a table.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

from ab import OneLineParser, in_turns, run_cases
from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.precision import TORCH_DTYPE, matmul_mode, tolerance
from rnnbench.verify import compare
from rnnbench.workload import (TorchStep, _call, _targets_on, finals_of, loss_of, make_inputs, module_call,
                               reference_step)

# (cell, batch, seq, hidden, dtype, loss): glample-2016 and theano-cudnn-2016 depth 1 in TF32, one bf16.
CASES = [("lstm", 20, 30, 100, "tf32", "last_step"), ("rnn_tanh", 20, 30, 100, "tf32", "last_step"),
         ("lstm", 20, 30, 500, "tf32", "last_step"), ("gru", 32, 30, 128, "tf32", "all_steps"),
         ("lstm", 32, 30, 128, "tf32", "all_steps"), ("lstm", 128, 30, 1024, "tf32", "all_steps"),
         ("gru", 128, 30, 1024, "tf32", "all_steps"), ("lstm", 32, 30, 512, "bf16", "all_steps")]
FIELDS = ("cell", "batch_size", "seq_len", "hidden_size", "dtype", "loss")
LANE_NAMES = ("torch-nn", "triton")


def loss_step(module, case: Case, inputs, names: tuple) -> TorchStep:
    """The training step as module_call wrote it before the seeds: loss_of, then autograd.grad."""
    lstm = case.cell == "lstm"
    move = lambda t: t.detach().to(device=case.device, dtype=TORCH_DTYPE[case.dtype], copy=True)  # noqa: E731
    x, h0, c0 = move(inputs.x), move(inputs.h0), move(inputs.c0)
    on_device = _targets_on(inputs, case.device)
    leaves = [x, h0, c0] if lstm else [x, h0]
    for t in leaves:
        t.requires_grad_(True)
    params = list(module.parameters())

    def train():
        output, h_n = _call(module, x, (h0, c0) if lstm else h0, None, None)
        finals = finals_of(case.cell, h_n)
        grads = torch.autograd.grad(loss_of(output, finals, on_device, case.loss), [*leaves, *params])
        return (output.detach(), *(f.detach() for f in finals), *grads)

    return TorchStep(train, names, case.device)


def measure(spec: tuple, budget_s: float) -> dict:
    cell, batch, seq, hidden, dtype, loss = spec
    case = Case(cell=cell, batch_size=batch, seq_len=seq, input_size=hidden, hidden_size=hidden, num_layers=1,
                dtype=dtype, mode="train", loss=loss, device="cuda")
    inputs = make_inputs(case)
    row = dict(zip(FIELDS, spec))
    with matmul_mode(dtype):
        reference = reference_step(case, inputs)
        for name in LANE_NAMES:
            lane = LANES[name]
            module = lane.module_for(case, inputs.weights)
            fn, names = module_call(module, case, inputs, lane.canonical_name)
            steps = {"loss": loss_step(module, case, inputs, names), "seeded": TorchStep(fn, names, case.device)}
            for label, step in steps.items():
                outputs, _ = step.first_call()
                verdict = compare(outputs, reference, tolerance(cell, dtype))
                row[f"{name}_{label}_error"] = verdict.max_rel_error
                if not verdict.ok:
                    raise RuntimeError(f"{name} {label}: {verdict.message}")
            times = in_turns(steps, lambda _: contextlib.nullcontext(), budget_s)
            row[f"{name}_loss_ms"], row[f"{name}_seeded_ms"] = times["loss"], times["seeded"]
            row[f"{name}_b_over_a"] = times["seeded"] / times["loss"]
    base, ours = LANE_NAMES
    row["ratio_loss"] = row[f"{base}_loss_ms"] / row[f"{ours}_loss_ms"]
    row["ratio_seeded"] = row[f"{base}_seeded_ms"] / row[f"{ours}_seeded_ms"]
    return row


def main() -> None:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--case-budget", type=float, default=0.3, help="seconds per timed measurement")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.exit(2, f"{p.prog}: error: needs a CUDA device\n")
    rows = run_cases(args.out_dir / "ab.jsonl", CASES, FIELDS, lambda spec: measure(spec, args.case_budget), 900)
    print("\ncase | torch-nn loss / seeded ms (B/A) | triton loss / seeded ms (B/A) | torch-nn/triton loss -> seeded")
    for r in rows:
        if "error" in r:
            print(" ".join(str(r[f]) for f in FIELDS), "|", r["error"])
            continue
        print(" ".join(str(r[f]) for f in FIELDS),
              f"| {r['torch-nn_loss_ms']:.3f} / {r['torch-nn_seeded_ms']:.3f} ({r['torch-nn_b_over_a']:.2f})"
              f" | {r['triton_loss_ms']:.3f} / {r['triton_seeded_ms']:.3f} ({r['triton_b_over_a']:.2f})"
              f" | {r['ratio_loss']:.2f} -> {r['ratio_seeded']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
