"""The floor of an eager training step at glample's size for any layer written as an autograd
Function, against ours and cuDNN's (one GPU).

    PYTHONPATH=src python3 ab/train_floor.py OUT

The engine's training step (workload.module_call: forward, the loss's gradient seeds,
torch.autograd.grad to x, h0 and every weight) around four modules, in turns (ABCD DCBA ...):
``torch-nn`` (cuDNN), ``triton`` (rnnbench.nn, replayed), ``empty`` (an autograd Function with the
same inputs and outputs that launches nothing: its forward returns fresh empty tensors, its backward
fresh empty gradients) and ``empty-saving`` (the same, saving what ours saves). Host µs per call
(no synchronisation) and synchronised µs per call, medians. Then our step again with timers on its
parts: the module's forward, the layer's forward inside Function.apply, each replay call, the
seeds, autograd.grad and our backward inside it.
"""
import json
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = ["src", "benchmarks"]
import torch  # noqa: E402

from rnnbench import nn as rnn_nn  # noqa: E402
from rnnbench import workload  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.ops import replay, replayed_layer  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402

CASES = [("rnn_tanh", "tf32"), ("lstm", "tf32")]


class Empty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, saving):
        t, b, _ = x.shape
        h = w_hh.shape[1]
        if saving:  # what ours keeps: x, h0, c0, weights, the h sequence, the gates, (cells)
            ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, x.new_empty(t + 1, b, h), x.new_empty(t, b, w_hh.shape[0]))
        else:
            ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih)
        return x.new_empty(t, b, h), x.new_empty(1, b, h), None if c0 is None else x.new_empty(1, b, h)

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        x, h0, c0, w_ih, w_hh, b_ih, *_ = ctx.saved_tensors
        e = torch.empty_like
        return (e(x), e(h0), None if c0 is None else e(c0), e(w_ih), e(w_hh), e(b_ih), e(b_ih), None)


def empty_module(cell, saving):
    base = torch.nn.LSTM if cell == "lstm" else torch.nn.RNN

    class EmptyLayer(base):
        def forward(self, x, hx):
            lstm = isinstance(hx, tuple)
            h0, c0 = hx if lstm else (hx, None)
            out, h_n, c_n = Empty.apply(x, h0, c0, *self._flat_weights, saving)
            return out, ((h_n, c_n) if lstm else h_n)

    return EmptyLayer


def host(fn, calls=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for k in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if k % 10 == 9:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return 1e6 * statistics.median(times)


def synced(fn, calls=300):
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


acc: dict[str, list[float]] = {}


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc.setdefault(name, []).append(time.perf_counter() - t0)
    return wrapper


PATCHED = [(torch.autograd, "grad"), (replayed_layer, "_backward"), (replay.Replay, "__call__"),
           (rnn_nn._KernelPath, "forward"), (rnn_nn._KernelPath, "_replayed"), (rnn_nn._KernelPath, "_replay_key"),
           (rnn_nn._KernelPath, "_replayed_layer"), (replayed_layer.RecurrentLayer, "keep_for_backward"),
           (Empty, "backward")]
STATIC = [(replayed_layer.ReplayedLayer, "forward"), (Empty, "forward")]
CLASSMETHODS = [(replayed_layer.ReplayedLayer, "apply"), (Empty, "apply")]


def patch():
    """Timers on the parts (put back by the returned function)."""
    kept = []
    for owner, name in PATCHED + STATIC + CLASSMETHODS:
        raw = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name)
        kept.append((owner, name, name in owner.__dict__ if isinstance(owner, type) else True, raw))
    label = lambda owner, name: f"{getattr(owner, '__name__', owner)}.{name}"  # noqa: E731
    for owner, name in PATCHED:
        setattr(owner, name, timed(label(owner, name), getattr(owner, name)))
    for owner, name in STATIC:
        setattr(owner, name, staticmethod(timed(label(owner, name), getattr(owner, name))))
    for owner, name in CLASSMETHODS:
        bound = getattr(owner, name)
        setattr(owner, name, timed(label(owner, name), bound))

    def restore():
        for owner, name, own, raw in kept:
            if own:
                setattr(owner, name, raw)
            else:
                delattr(owner, name)
    return restore


def parts(step_fn):
    """A step again with timers on its parts."""
    restore = patch()
    try:
        for _ in range(20):
            step_fn()
        torch.cuda.synchronize()
        acc.clear()
        for k in range(300):
            step_fn()
            if k % 10 == 9:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        out = {}
        for name, v in acc.items():
            if name == "Replay.__call__":  # forward's and backward's alternate
                out["replay_forward"] = 1e6 * statistics.median(v[0::2])
                out["replay_backward"] = 1e6 * statistics.median(v[1::2])
            else:
                out[name] = 1e6 * statistics.median(v)
        out["counts"] = {n: len(v) for n, v in acc.items()}
        return out
    finally:
        restore()


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for cell, dt in CASES:
        case = Case(cell=cell, batch_size=20, seq_len=30, input_size=100, hidden_size=100, dtype=dt, mode="train",
                    device="cuda", loss="last_step")
        inputs = workload.make_inputs(case)
        with matmul_mode(dt):
            steps = {}
            for name in ("torch-nn", "triton"):
                module = LANES[name].module_for(case, inputs.weights)
                steps[name] = workload.module_call(module, case, inputs, LANES[name].canonical_name)[0]
            for name, saving in (("empty", False), ("empty-saving", True)):
                module = empty_module(cell, saving)(100, 100).cuda()
                steps[name] = workload.module_call(module, case, inputs)[0]
            times = {name: {"host": [], "synced": []} for name in steps}
            order = list(steps)
            for rnd in range(4):
                for name in order if rnd % 2 == 0 else order[::-1]:
                    times[name]["host"].append(host(steps[name]))
                    times[name]["synced"].append(synced(steps[name]))
            row = dict(case=f"{cell} B20 T30 H100 {dt} train",
                       **{f"{n}_{k}_us": statistics.median(v[k]) for n, v in times.items() for k in v},
                       turns={f"{n}_{k}": v[k] for n, v in times.items() for k in v},
                       triton_parts=parts(steps["triton"]), empty_parts=parts(steps["empty-saving"]))
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "train_floor.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
