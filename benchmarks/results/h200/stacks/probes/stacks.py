"""Eager calls of stacked modules (several layers, or both directions) with each layer replayed
(``rnnbench.nn._REPLAYS``, ``ops/replayed_layer.run_layer``) against the normal path
(``replay.ENABLED`` off) and torch.nn on cuDNN, in one process.

Each form its own module on the same weights (torch.nn's loaded from ours), at the seed suites'
small sizes where the host bounds an eager call: glample's RNN (batch 20, hidden 100) and theano's
LSTM and GRU (batch 32, hidden 128), 30 steps, as 2 and 3 layers, 1 and 2 layers bidirectional, in
TF32 and bf16; ``forward`` under no_grad, ``train`` the forward, a loss on the output and final
states, and ``autograd.grad`` for the input, the states and every parameter.

Before any timing: three calls of ``replay`` and ``normal`` on the same fresh inputs give the same
tensors bit for bit (``same``), and ``replay``'s output is within the lane tolerance of torch.nn's
(``err``). Then 4 rounds of the forms A B C C B A, 100 calls each (events around a call,
synchronised after), medians in µs. From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h200/stacks/probes/stacks.py OUT.jsonl
"""
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]
import torch  # noqa: E402

from rnnbench import nn as rnn  # noqa: E402
from rnnbench.ops import replay  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import time_call  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402

SIZES = [("rnn_tanh", 20, 100), ("lstm", 32, 128), ("gru", 32, 128)]
STACKS = [(2, False), (3, False), (1, True), (2, True)]
DTYPES = {"tf32": torch.float32, "bf16": torch.bfloat16}
OURS = {"lstm": rnn.LSTM, "gru": rnn.GRU, "rnn_tanh": rnn.RNN}
THEIRS = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN}


def timed(fn, calls):
    """Median µs of ``calls`` calls, each timed as the engine times one (``timing.time_call``:
    events around it, synchronised before and after). (c162 and c165 ran this probe with a copy of
    that timer written out here, and took the upper middle of an even count as the median.)"""
    return 1e3 * statistics.median(time_call(fn, "cuda")[1] for _ in range(calls))


def inputs(cell, batch, hidden, layers, dtype, train, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(30, batch, hidden, generator=gen, device="cuda").to(dtype).requires_grad_(train)
    h0 = (torch.randn(layers, batch, hidden, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_(train)
    c0 = (torch.randn(layers, batch, hidden, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_(train)
    return x, ((h0, c0) if cell == "lstm" else h0)


def step(module, x, hx, train):
    if not train:
        with torch.no_grad():
            out, finals = module(x, hx)
        return [out, *(finals if isinstance(finals, tuple) else (finals,))]
    out, finals = module(x, hx)
    finals = list(finals) if isinstance(finals, tuple) else [finals]
    loss = sum(t.float().sum() for t in [out, *finals])
    leaves = [x, *(hx if isinstance(hx, tuple) else (hx,)), *module.parameters()]
    return [out.detach(), *(f.detach() for f in finals), *torch.autograd.grad(loss, leaves)]


def main(out):
    written = open(out, "w")  # (a row a line as measured: a run cut short keeps what it measured)
    for cell, batch, hidden in SIZES:
        for num_layers, bidirectional in STACKS:
            for name, dtype in DTYPES.items():
                kwargs = dict(num_layers=num_layers, bidirectional=bidirectional)
                torch.manual_seed(0)
                ours = OURS[cell](hidden, hidden, backend="triton", **kwargs).to("cuda", dtype)
                normal = OURS[cell](hidden, hidden, backend="triton", **kwargs).to("cuda", dtype)
                theirs = THEIRS[cell](hidden, hidden, **kwargs).to("cuda", dtype)
                normal.load_state_dict(ours.state_dict())
                theirs.load_state_dict(ours.state_dict())
                layers = num_layers * (2 if bidirectional else 1)
                for train in (False, True):
                    with matmul_mode(name):
                        x, hx = inputs(cell, batch, hidden, layers, dtype, train, 1)
                        forms = {"replay": (ours, True), "normal": (normal, False), "torch-nn": (theirs, True)}
                        for module, enabled in forms.values():
                            replay.ENABLED = enabled
                            for _ in range(20):
                                step(module, x, hx, train)
                        same, err = True, 0.0
                        for seed in (2, 3, 4):
                            fresh = inputs(cell, batch, hidden, layers, dtype, train, seed)
                            replay.ENABLED = True
                            a = [t.clone() for t in step(ours, *fresh, train)]
                            c = step(theirs, *fresh, train)
                            replay.ENABLED = False
                            b = step(normal, *fresh, train)
                            same &= len(a) == len(b) and all(torch.equal(p, q) for p, q in zip(a, b))
                            err = max(err, float(relative_error(a[0].float(), c[0].float())))
                        got = {f: [] for f in forms}
                        for _ in range(4):
                            for f in [*forms, *reversed(forms)]:
                                replay.ENABLED = forms[f][1]
                                got[f].append(timed(lambda: step(forms[f][0], x, hx, train), 100))
                        replay.ENABLED = True
                    # (each key's entry ends with its layers' replays: rnn._STACK_REPLAYS' (weights,
                    # layers) when c162 ran this at 84e6c60, rnn._REPLAYS' (weights, launch, layers) since)
                    stacked = getattr(rnn, "_STACK_REPLAYS", rnn._REPLAYS).get(ours, {})
                    recorded = sum(layer.forward is not None for found in stacked.values() for layer in found[-1])
                    row = dict(cell=cell, batch_size=batch, hidden_size=hidden, num_layers=num_layers,
                               bidirectional=bidirectional, dtype=name, mode="train" if train else "forward",
                               same=same, err=err, recorded_forwards=recorded,
                               **{f: statistics.median(v) for f, v in got.items()})
                    written.write(json.dumps(row) + "\n")
                    written.flush()
                    print(f"{cell:8s} B{batch} H{hidden} L{num_layers} {'bi ' if bidirectional else 'uni'} {name} "
                          f"{row['mode']:7s} same {same} err {err:.1e} rec {recorded:2d}  replay {row['replay']:8.1f}  "
                          f"normal {row['normal']:8.1f}  torch-nn {row['torch-nn']:8.1f} µs  "
                          f"replay/normal {row['replay'] / row['normal']:.3f}  torch-nn/replay "
                          f"{row['torch-nn'] / row['replay']:.2f}  torch-nn/normal {row['torch-nn'] / row['normal']:.2f}",
                          flush=True)
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
