"""Strict fp32 on our kernels: 3xTF32 on tensor cores against IEEE products on FMA units (one GPU).

    python benchmarks/strict_fp32.py OUT_DIR [--budget SECONDS] [--cases N] [--graphed]

For each strict-fp32 case of the seed suites (TF32 off, as rnnbench's ``fp32`` dtype runs), the
engine's ``triton`` lane runs under ``ops.recurrence.strict_fp32("ieee")`` and under
``strict_fp32("tf32x3")``, beside ``torch-nn`` (cuDNN) on the same weights and inputs:

- accuracy: the largest relative error over everything the engine's training step returns (output,
  final states, every gradient) against its float64 reference (``verify.compare``), for both modes
  and for cuDNN;
- time: the engine's forward and training steps, timed as the engine times them
  (``Step.measure``), the two modes in the order A B B A and averaged, so that drift favours
  neither.

``--graphed`` times the CUDA-graph lanes instead (``triton-graph`` beside ``torch-nn-graph``,
captured under each mode): the kernels alone, without the host's time per call.

(The run in ``benchmarks/results/h100/triton-lane-4/strict_fp32.jsonl`` was made by this script's
first version, which built its own modules, step and reference; same measures, MSE over every step
for every case.)

Writes ``OUT_DIR/strict_fp32.jsonl`` (the environment record, then one row per case, as it is
measured) and prints a table.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import parser as ab_parser, in_turns, median_ms, run_cases  # noqa: E402

# (cell, batch_size, seq_len, input_size, hidden_size, num_layers): glample-2016, theano-cudnn-2016,
# fastrnns; smallest first so that a run out of budget keeps the most cases.
CASES = [
    ("rnn_tanh", 20, 30, 100, 100, 1), ("lstm", 20, 30, 100, 100, 1), ("rnn_tanh", 20, 30, 100, 500, 1),
    ("lstm", 20, 30, 100, 500, 1), ("lstm", 32, 30, 128, 128, 1), ("gru", 32, 30, 512, 512, 1),
    ("lstm", 32, 30, 512, 512, 1), ("lstm", 128, 30, 512, 512, 1), ("gru", 128, 30, 1024, 1024, 1),
    ("lstm", 128, 30, 1024, 1024, 1), ("lstm", 64, 100, 512, 512, 1), ("lstm", 128, 200, 512, 512, 3),
]


def measure_case(cell, b, t, i, h, layers, budget_s, device="cuda", graphed=False) -> dict:
    """One case through the engine's own pieces: its inputs and canonical weights, the lanes'
    steps (``workload.lane_step``), the float64 reference and ``verify.compare``, and
    ``Step.measure``; ``triton`` under each strict-fp32 mode, ``torch-nn`` beside it."""
    from rnnbench.cases import Case
    from rnnbench.lanes import LANES
    from rnnbench.ops.recurrence import strict_fp32
    from rnnbench.precision import matmul_mode
    from rnnbench.verify import compare
    from rnnbench.workload import lane_step, make_inputs, reference_step

    row = dict(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, num_layers=layers)
    train = Case(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, num_layers=layers,
                 dtype="fp32", mode="train", device=device)
    cases = {"train": train, "forward": Case(**{**vars(train), "mode": "forward"})}
    inputs = make_inputs(train)
    reference = reference_step(train, inputs)
    modes = {"torch-nn": None, "ieee": "ieee", "tf32x3": "tf32x3"}  # row key -> strict_fp32 mode
    with matmul_mode("fp32"):
        steps = {}
        for key, mode in modes.items():
            with strict_fp32(mode or "tf32x3"):
                lane = LANES[("torch-nn" if mode is None else "triton") + ("-graph" if graphed else "")]
                steps[key] = {which: lane_step(lane, case, inputs) for which, case in cases.items()}
                outputs, _ = steps[key]["train"].first_call()
                row[f"error_{key}"] = compare(outputs, reference, 1.0).max_rel_error
        for which in cases:
            row[f"{which}_ms_torch-nn"] = median_ms(steps["torch-nn"][which], budget_s)
            times = in_turns({mode: steps[mode][which] for mode in ("ieee", "tf32x3")}, strict_fp32, budget_s)
            for mode, ms in times.items():
                row[f"{which}_ms_{mode}"] = ms
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
    parser = ab_parser(__doc__, 240.0)
    parser.add_argument("--cases", type=int, default=len(CASES), help="the first N cases")
    parser.add_argument("--graphed", action="store_true", help="time the CUDA-graph lanes (kernels alone)")
    args = parser.parse_args()
    if not 1 <= args.cases <= len(CASES):
        parser.error(f"--cases takes 1 to {len(CASES)}; got {args.cases}")
    if args.graphed and args.device != "cuda":
        parser.error("--graphed times CUDA graphs: it needs --device cuda")
    fields = ("cell", "batch_size", "seq_len", "input_size", "hidden_size", "num_layers")
    rows = run_cases(args.out_dir / "strict_fp32.jsonl", CASES[: args.cases], fields,
                     lambda case: measure_case(*case, args.case_budget, args.device, args.graphed), args.budget)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
