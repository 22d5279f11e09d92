"""Bidirectional layers: our two directions at once (two streams) against in turn, beside cuDNN.

    python benchmarks/bidirectional.py OUT_DIR [--budget SECONDS] [--case-budget SECONDS] [--device cuda|cpu]

A bidirectional layer's two directions are independent recurrences. Our kernels give each a grid
of programs that meet at a barrier every step, and at small sizes a grid holds few of the GPU's
multiprocessors, so ``rnnbench.nn`` runs the reverse direction on a side stream beside the
forward one wherever twice the programs can be resident (``nn._both_directions_fit``). This script
measures what that is worth, per case (cell, batch, seq, hidden, layers, dtype) and mode
(``forward`` under ``no_grad``; ``train``: forward, a squared loss of the output and the final
states, the gradients of the input and every parameter):

- ``cudnn``: ``torch.nn``'s bidirectional module;
- ``at_once``: ``rnnbench.nn``'s on the same weights (the default);
- ``in_turn``: the same under ``rnnbench.nn.directions_in_turn()`` (one stream, one after the other).

Checked first: ``at_once`` returns what ``in_turn`` does bit for bit (``same_bits``), and the
largest relative error of ours against cuDNN over everything the step returns is recorded
(``max_rel_error``). Then each step is timed as the engine times a lane (a median of synchronised
calls, ``ab.median_ms``) in the order A B C C B A and averaged. One JSON row per case (its two
modes under ``modes``) in ``OUT_DIR/bidirectional.jsonl`` after the environment record, as each
is measured; a table at the end.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

import ab  # noqa: E402

# (cell, batch, seq, hidden, layers, dtype): small and medium layers, where one direction's grid
# leaves most multiprocessors idle, then one too large to run twice at once (the rule's control).
CASES = [
    ("lstm", 32, 100, 256, 1, "bf16"),
    ("gru", 32, 100, 256, 1, "bf16"),
    ("lstm", 32, 100, 256, 2, "bf16"),
    ("lstm", 16, 200, 128, 1, "tf32"),
    ("lstm", 64, 100, 512, 1, "bf16"),
    ("lstm", 32, 100, 256, 1, "fp32"),
    ("lstm", 128, 50, 1024, 1, "bf16"),
]
CPU_CASES = [("lstm", 3, 5, 16, 2, "fp32"), ("gru", 2, 4, 8, 1, "fp32")]
ORDER = "ABCCBA"
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _step(module, cell: str, mode: str, x: torch.Tensor, hx: list[torch.Tensor]):
    """A callable returning the module's output, final states and (train) every gradient."""
    leaves = [x, *hx, *module.parameters()]

    def forward():
        out, finals = module(x, tuple(hx) if cell == "lstm" else hx[0])
        return [out, *(finals if cell == "lstm" else [finals])]

    def train():
        outs = forward()
        loss = sum(o.float().pow(2).sum() for o in outs)
        return [o.detach() for o in outs] + list(torch.autograd.grad(loss, leaves))

    if mode == "forward":
        return lambda: _no_grad(forward)
    return train


def _no_grad(fn):
    with torch.no_grad():
        return fn()


def measure(case: tuple, device: str, case_budget: float) -> list[dict]:
    from rnnbench import nn as rnn
    from rnnbench.precision import matmul_mode
    from rnnbench.verify import relative_error
    from rnnbench.workload import TorchStep

    cell, batch, seq, hidden, layers, dtype = case
    theirs_cls, ours_cls = {"lstm": (torch.nn.LSTM, rnn.LSTM), "gru": (torch.nn.GRU, rnn.GRU)}[cell]
    torch.manual_seed(0)
    theirs = theirs_cls(hidden, hidden, num_layers=layers, bidirectional=True).to(device, DTYPES[dtype])
    ours = ours_cls(hidden, hidden, num_layers=layers, bidirectional=True, backend="triton").to(device, DTYPES[dtype])
    ours.load_state_dict(theirs.state_dict())
    gen = torch.Generator(device).manual_seed(1)
    rows = []
    for mode in ("forward", "train"):
        x = torch.randn(seq, batch, hidden, device=device, generator=gen).to(DTYPES[dtype]).requires_grad_(mode == "train")
        hx = [(torch.randn(2 * layers, batch, hidden, device=device, generator=gen) * 0.5).to(DTYPES[dtype])
              .requires_grad_(mode == "train") for _ in range(2 if cell == "lstm" else 1)]
        settings = {"cudnn": contextlib.nullcontext, "at_once": contextlib.nullcontext,
                    "in_turn": rnn.directions_in_turn}
        modules = {"cudnn": theirs, "at_once": ours, "in_turn": ours}
        fns = {name: _step(modules[name], cell, mode, x, hx) for name in settings}
        with matmul_mode(dtype):
            results = {}
            for name, setting in settings.items():
                with setting():
                    results[name] = fns[name]()
            launch, _ = ours._launch(x, cell, None)
            fits = rnn._both_directions_fit(launch, x)
            same = all(torch.equal(a, b) for a, b in zip(results["at_once"], results["in_turn"]))
            error = max(relative_error(a, b) for a, b in zip(results["at_once"], results["cudnn"]))
            times: dict[str, list[float]] = {name: [] for name in settings}
            for turn in ORDER:
                name = list(settings)["ABC".index(turn)]
                with settings[name]():
                    times[name].append(ab.median_ms(TorchStep(fns[name], (), device), case_budget))
        ms = {f"{name}_ms": sum(t) / len(t) for name, t in times.items()}
        rows.append(dict(cell=cell, batch_size=batch, seq_len=seq, hidden_size=hidden, num_layers=layers, dtype=dtype,
                         mode=mode, at_once_fits=fits, same_bits=same, max_rel_error=error, **ms,
                         at_once_vs_in_turn=ms["in_turn_ms"] / ms["at_once_ms"],
                         at_once_vs_cudnn=ms["cudnn_ms"] / ms["at_once_ms"]))
    return rows


def main() -> int:
    args = ab.parser(__doc__, budget_s=300).parse_args()
    cases = CPU_CASES if args.device == "cpu" else CASES
    fields = ("cell", "batch_size", "seq_len", "hidden_size", "num_layers", "dtype")
    done = ab.run_cases(args.out_dir / "bidirectional.jsonl", cases, fields,
                        lambda case: {"case": list(case), "modes": measure(case, args.device, args.case_budget)},
                        args.budget)
    print(f"{'case':34s} {'mode':8s} {'fits':5s} {'bits':5s} {'cudnn':>8s} {'in turn':>8s} {'at once':>8s}"
          f" {'x turn':>7s} {'x cudnn':>7s}")
    for r in (m for row in done for m in row.get("modes", [])):
        name = f"{r['cell']} B{r['batch_size']} T{r['seq_len']} H{r['hidden_size']} L{r['num_layers']} {r['dtype']}"
        print(f"{name:34s} {r['mode']:8s} {r['at_once_fits']!s:5s} {r['same_bits']!s:5s} {r['cudnn_ms']:8.3f}"
              f" {r['in_turn_ms']:8.3f} {r['at_once_ms']:8.3f} {r['at_once_vs_in_turn']:7.2f} {r['at_once_vs_cudnn']:7.2f}")
    for row in done:
        if "error" in row:
            print(f"{row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
