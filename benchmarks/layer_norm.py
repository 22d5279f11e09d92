"""What layer normalization costs a training step or an evaluation forward: ``rnnbench.nn`` with
``layer_norm=True`` on the loop of ``ops/loop.py`` and (where a plan of theirs takes it) on our
kernels, against the same layer without it on our kernels and on cuDNN, in one
process.

Forms, each its own module on the same weights (the gains at their ones and zeros): ``loop-ln``
(layer norm, the loop), ``triton-ln`` (layer norm on the kernels, ``backend="triton"``; absent
from a row whose shape or cell it refuses, ``triton-ln_refused`` saying why), ``triton`` (no
layer norm, ``backend="triton"``), ``cudnn`` (torch.nn, no layer norm). A step is a training
step (the forward, a loss on the output and final states, ``autograd.grad`` for the input, the
states and every parameter) or an evaluation forward under ``no_grad`` (``--mode``; ``ab.module_step``).
Sizes: glample's (batch 20, hidden 100, 30 steps) for every cell, theano's (32, 128, 30) for the
LSTM, a language model's (32, 650, 35) and (64, 512, 100) for the LSTM and GRU, and (32, 64, 30)
for the LSTM and GRU (the widest their fp32 kernels hold in one program); TF32 and bf16. Before
timing, each layer-normalized form's step against the float64 reference (``rnnbench.ops.naive``):
the largest relative error of any returned tensor (``err``, the loop's; ``err_triton-ln``). Then 3
rounds of A B C C B A, 10 calls each (``ab.rounds_ms``), medians in ms, one JSON row a case after
the environment record; ``replayed_triton-ln`` and ``replayed_triton``: whether each
kernel form's calls were replayed (``rnnbench.nn``: a forward replay kept for every layer). From
the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/layer_norm.py OUT.jsonl [--mode train|eval]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from ab import OneLineParser, check_device, module_step, rounds_ms, run_cases  # noqa: E402

SIZES = [("lstm", 20, 100, 30), ("lstm", 32, 128, 30), ("lstm", 32, 650, 35), ("lstm", 64, 512, 100),
         ("gru", 20, 100, 30), ("gru", 32, 650, 35), ("gru", 64, 512, 100), ("rnn_tanh", 20, 100, 30),
         ("lstm", 32, 64, 30), ("gru", 32, 64, 30)]
DTYPES = ("tf32", "bf16")
FIELDS = ("cell", "batch_size", "hidden_size", "seq_len", "dtype")


def _modules(cell: str, hidden: int, dtype, train: bool):
    import torch

    from rnnbench import nn as rnn

    ours = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN}[cell]
    torch.manual_seed(0)
    normed = ours(hidden, hidden, backend="torch", layer_norm=True).to("cuda", dtype)
    forms = {"loop-ln": normed, "triton-ln": ours(hidden, hidden, backend="triton", layer_norm=True)}
    forms["triton"] = ours(hidden, hidden, backend="triton")
    forms["cudnn"] = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}[cell](hidden, hidden)
    for name, m in forms.items():
        if name != "loop-ln":
            m.to("cuda", dtype).load_state_dict(normed.state_dict(), strict=False)
    return forms


def _inputs(cell, batch, hidden, steps, dtype, grad):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(steps, batch, hidden, generator=gen, device="cuda").to(dtype).requires_grad_(grad)
    h0, c0 = ((torch.randn(1, batch, hidden, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_(grad)
              for _ in range(2))
    return x, ((h0, c0) if cell == "lstm" else h0)


def _error(cell, module, x, hx, train: bool) -> float:
    """The largest relative error of the layer-normalized step against float64 on its parameters."""
    import torch

    from rnnbench.ops.naive import naive_network
    from rnnbench.verify import relative_error

    got = module_step(module, x, hx, train)
    wide = {n: p.detach().double().requires_grad_(train) for n, p in module.named_parameters()}
    xw = x.detach().double().requires_grad_(train)
    states = [s.detach().double().requires_grad_(train) for s in (hx if isinstance(hx, tuple) else (hx,))]
    out, finals = naive_network(cell, wide, xw, tuple(states) if cell == "lstm" else states[0], 1)
    ref = [out, *(finals if cell == "lstm" else (finals,))]
    if train:
        loss = sum(t.sum() for t in ref)
        ref = [t.detach() for t in ref] + list(torch.autograd.grad(loss, [xw, *states, *wide.values()]))
    return max(float(relative_error(a.double(), b)) for a, b in zip(got, ref, strict=True))


def _replayed(module) -> bool:
    """Whether ``module``'s calls were replayed: a forward replay kept for its one key, for every
    layer of it (``rnnbench.nn._REPLAYS``)."""
    from rnnbench import nn as rnn

    kept = rnn._REPLAYS.get(module)
    if not kept or len(kept) != 1:
        return False
    (_, _, layers), = kept.values()
    return all(layer.forward is not None for layer in (layers if type(layers) is tuple else (layers,)))


def measure(case, train: bool) -> dict:
    import torch

    from rnnbench.precision import matmul_mode

    cell, batch, hidden, steps, name = case
    dtype = {"tf32": torch.float32, "bf16": torch.bfloat16}[name]
    forms = _modules(cell, hidden, dtype, train)
    row = dict(zip(FIELDS, case), mode="train" if train else "eval")
    with matmul_mode(name):
        x, hx = _inputs(cell, batch, hidden, steps, dtype, train)
        for form, module in list(forms.items()):
            try:
                for _ in range(3):
                    module_step(module, x, hx, train)
            except RuntimeError as refused:  # (backend="triton" on a shape the layer-norm plan refuses)
                if form != "triton-ln":
                    raise
                row["triton-ln_refused"] = str(refused)
                del forms[form]
        row["err"] = _error(cell, forms["loop-ln"], x, hx, train)
        if "triton-ln" in forms:
            row["err_triton-ln"] = _error(cell, forms["triton-ln"], x, hx, train)
        ms = rounds_ms({f: (lambda m=m: module_step(m, x, hx, train)) for f, m in forms.items()}, "cuda")
    row.update({f"{f}_ms": v for f, v in ms.items()})
    row.update({f"replayed_{f}": _replayed(forms[f]) for f in ("triton-ln", "triton") if f in forms})
    for normed in ("loop-ln", "triton-ln"):
        if normed in ms:
            row.update({f"{normed}/{f}": ms[normed] / ms[f] for f in ("triton", "cudnn")})
    if "triton-ln" in ms:
        row["loop-ln/triton-ln"] = ms["loop-ln"] / ms["triton-ln"]
    return row


def cli(argv: list[str]) -> int:
    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the rows, one JSON line each after the environment record")
    p.add_argument("--mode", choices=("train", "eval"), default="train")
    p.add_argument("--budget", type=float, default=400.0, help="seconds for the whole run")
    args = p.parse_args(argv)
    check_device(p, "cuda")
    import warnings

    warnings.simplefilter("ignore")  # (the loop's fallback warning, once per size: the rows say it)
    cases = [(*size, dtype) for size in SIZES for dtype in DTYPES]
    run_cases(args.out, cases, FIELDS, lambda case: measure(case, args.mode == "train"), args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
