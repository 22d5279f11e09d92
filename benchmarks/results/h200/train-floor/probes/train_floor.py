"""The floor of an eager training step at glample's size for any layer written as an autograd
Function, against ours and cuDNN's (one GPU, one process).

    PYTHONPATH=src python3 benchmarks/results/h200/train-floor/probes/train_floor.py OUT_DIR

Why: glample's TF32 RNN at hidden 100 (batch 20, seq 30, input 100) trains 1.39-1.66x ``torch-nn``
eagerly from run to run and lease to lease at one tree, where issue 8 asks 1.5x; its graphed step is
a twentieth of its eager one, so the ratio is the host's. How much of the eager step could any
layer save?

The engine's training step (``workload.module_call``: the forward, the loss's gradient seeds,
``torch.autograd.grad`` to x, h0 (c0) and every weight) around four modules, timed in turns (A B C D,
then D C B A, four rounds): ``torch-nn`` (cuDNN), ``triton`` (rnnbench.nn, replayed), ``empty`` (an
autograd Function with our layer's inputs and outputs that launches nothing: its forward returns
fresh empty tensors, its backward fresh empty gradients) and ``empty-saving`` (the same, saving as
many tensors as ours). Host µs a call (no synchronisation but every 10 calls) and synchronised µs a
call, medians of 300. Then ours and ``empty-saving`` again with timers on their parts (the module's
forward and its pieces, each replay, ``autograd.grad``, the backwards). Writes
``OUT_DIR/train_floor.jsonl`` (an environment record first, ``ab.run_cases``) and prints each row.
"""
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]
import torch  # noqa: E402

from host_time import host_us, synced_us  # noqa: E402  (the tree's timers of host work and of a synced call)
from rnnbench import nn as rnn_nn  # noqa: E402
from rnnbench import workload  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.ops import replay, replayed_layer  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402

CASES = [("rnn_tanh", "tf32"), ("lstm", "tf32")]


class Empty(torch.autograd.Function):
    """Our layer's inputs and outputs (``ReplayedLayer``'s, ``saving`` a flag), nothing launched:
    ``Empty.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, saving)`` -> ``(output [T, B, H], h_n [1, B,
    H], c_n or None)``, fresh and empty; its backward fresh empty gradients of the inputs' shapes."""

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
    """A torch.nn RNN or LSTM class (the engine builds its weights and calls it as torch.nn's) whose
    forward is :class:`Empty`."""
    base = torch.nn.LSTM if cell == "lstm" else torch.nn.RNN

    class EmptyLayer(base):
        def forward(self, x, hx):
            lstm = isinstance(hx, tuple)
            h0, c0 = hx if lstm else (hx, None)
            out, h_n, c_n = Empty.apply(x, h0, c0, *self._flat_weights, saving)
            return out, ((h_n, c_n) if lstm else h_n)

    return EmptyLayer


acc: dict[str, list[float]] = {}


def timed(name, fn):
    """``fn`` adding each call's seconds to ``acc[name]``."""

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


def measure(case) -> dict:
    """One case's row: each module's host and synchronised µs in every turn, their medians, and the
    parts of ours and of ``empty-saving``."""
    cell, dt = case
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
        for step in steps.values():  # (warm: recorded for replay, allocator pools filled)
            for _ in range(20):
                step()
        times = {name: {"host": [], "synced": []} for name in steps}
        order = list(steps)
        for rnd in range(4):
            for name in order if rnd % 2 == 0 else order[::-1]:
                times[name]["host"].append(host_us(steps[name], 300))
                times[name]["synced"].append(synced_us(steps[name], 300))
        return dict(case=f"{cell} B20 T30 H100 {dt} train",
                    **{f"{n}_{k}_us": statistics.median(v[k]) for n, v in times.items() for k in v},
                    turns={f"{n}_{k}": v[k] for n, v in times.items() for k in v},
                    triton_parts=parts(steps["triton"]), empty_parts=parts(steps["empty-saving"]))


def main(argv: list[str]) -> int:
    from ab import OneLineParser, check_device, run_cases

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    check_device(p, "cuda")
    run_cases(args.out_dir / "train_floor.jsonl", CASES, ("cell", "dtype"), measure, float("inf"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
