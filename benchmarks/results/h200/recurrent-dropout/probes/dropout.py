"""Training steps with recurrent dropout (``recurrent_dropout=0.25``, a new mask per call) on our
kernels against the loop of torch's cells PyTorch offers for it (the same module with
``backend="torch"``: ``ops/loop.py``; cuDNN has no recurrent dropout), and torch.nn on cuDNN without
it (what giving it up buys), in one process.

Each form its own module on the same weights, in training mode; a step is the forward, a loss on
the output and final states, and ``autograd.grad`` for the input, the states and every parameter.
Sizes: glample's RNN (batch 20, hidden 100) and theano's LSTM (32, 128) at 30 steps, a language
model's LSTM (batch 32, hidden 650, 35 steps) and batch 64, hidden 512 at 100 steps, LSTM and RNN;
the GRU at (32, 128, 30 steps) and (64, 512, 100 steps) since c170; TF32 and bf16. Before any
timing, two steps of ``triton`` and ``loop`` from one seed (so the same masks): the largest
relative error of any returned tensor between them (``err``). Then 3 rounds of
the forms A B C C B A, 10 calls each (events around a call, synchronised after: ``timing.time_call``),
medians in ms. From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h200/recurrent-dropout/probes/dropout.py OUT.jsonl
"""
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]
import torch  # noqa: E402

from rnnbench import nn as rnn  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import time_call  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402

SIZES = [("rnn_tanh", 20, 100, 30), ("lstm", 32, 128, 30), ("lstm", 32, 650, 35), ("lstm", 64, 512, 100),
         ("rnn_tanh", 64, 512, 100), ("gru", 32, 128, 30), ("gru", 64, 512, 100)]
DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16}
OURS = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN}
THEIRS = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}
P = 0.25


def timed(fn, calls):
    return statistics.median(time_call(fn, "cuda")[1] for _ in range(calls))


def inputs(cell, batch, hidden, steps, dtype, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(steps, batch, hidden, generator=gen, device="cuda").to(dtype).requires_grad_()
    h0, c0 = ((torch.randn(1, batch, hidden, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_()
              for _ in range(2))
    return x, ((h0, c0) if cell == "lstm" else h0)


def step(module, x, hx):
    out, finals = module(x, hx)
    finals = list(finals) if isinstance(finals, tuple) else [finals]
    loss = sum(t.float().sum() for t in [out, *finals])
    leaves = [x, *(hx if isinstance(hx, tuple) else (hx,)), *module.parameters()]
    return [out.detach(), *(f.detach() for f in finals), *torch.autograd.grad(loss, leaves)]


def main(out):
    written = open(out, "w")  # (a row a line as measured: a run cut short keeps what it measured)
    for cell, batch, hidden, steps in SIZES:
        for name, dtype in DTYPES.items():
            torch.manual_seed(0)
            ours = OURS[cell](hidden, hidden, backend="triton", recurrent_dropout=P).to("cuda", dtype)
            loop = OURS[cell](hidden, hidden, backend="torch", recurrent_dropout=P).to("cuda", dtype)
            cudnn = THEIRS[cell](hidden, hidden).to("cuda", dtype)
            loop.load_state_dict(ours.state_dict())
            cudnn.load_state_dict(ours.state_dict())
            forms = {"triton": ours, "loop": loop, "cudnn-no-dropout": cudnn}
            with matmul_mode(name):
                x, hx = inputs(cell, batch, hidden, steps, dtype, 1)
                for module in forms.values():
                    for _ in range(3):
                        step(module, x, hx)
                err = 0.0
                for seed in (2, 3):
                    fresh = inputs(cell, batch, hidden, steps, dtype, seed)
                    torch.manual_seed(seed)
                    a = [t.clone() for t in step(ours, *fresh)]
                    torch.manual_seed(seed)
                    b = step(loop, *fresh)
                    err = max(err, max(float(relative_error(p.float(), q.float())) for p, q in zip(a, b)))
                got = {f: [] for f in forms}
                for _ in range(3):
                    for f in [*forms, *reversed(forms)]:
                        got[f].append(timed(lambda: step(forms[f], x, hx), 10))
            row = dict(cell=cell, batch_size=batch, hidden_size=hidden, seq_len=steps, dtype=name, mode="train",
                       recurrent_dropout=P, err=err, **{f"{f}_ms": statistics.median(v) for f, v in got.items()})
            written.write(json.dumps(row) + "\n")
            written.flush()
            print(f"{cell:8s} B{batch:<3d} H{hidden:<4d} T{steps:<3d} {name} err {err:.1e}  triton "
                  f"{row['triton_ms']:8.3f}  loop {row['loop_ms']:8.3f}  cudnn-no-dropout "
                  f"{row['cudnn-no-dropout_ms']:8.3f} ms  loop/triton {row['loop_ms'] / row['triton_ms']:6.2f}  "
                  f"cudnn-no-dropout/triton {row['cudnn-no-dropout_ms'] / row['triton_ms']:.2f}", flush=True)
    written.close()


def cli(argv: list[str]) -> int:
    from ab import OneLineParser, check_device

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the rows, one JSON line each")
    args = p.parse_args(argv)
    check_device(p, "cuda")
    main(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
