"""Upper bounds on what is left of an eager step's host time, in one process: the engine's steps
(``workload.module_call``; forward under ``no_grad``; training: forward, the loss's gradient,
``autograd.grad``) of ``torch-nn`` and ``triton`` beside ``triton`` with one cost taken away,
each form a measurement of what removing that cost could give at most:

- ``pooled``: every allocation a replay makes (outputs, gradients, saved tensors) taken from a
  ring of tensors made once, not from ``torch.empty`` (unsafe outside a probe: a caller's tensor
  is overwritten sixteen calls later);
- ``one-launch`` (forward only): the forward replay without its first launch (the input
  projection): the most that computing the projection inside the recurrence's launch could save;
- ``unwrapped``: the module's forward without ``torch.compiler.disable``'s wrapper;
- ``stand-in``: the layer replaced by one that launches nothing (``call-floor/probes/train_floor.py``).

On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/bounds/probes/bounds.py OUT.jsonl

Per case (TF32: theano's LSTM and GRU at batch 32, hidden 128; glample's RNN and LSTM at batch 20,
hidden 100), medians over 8 rounds (forms in the order A B ... B A) of 100 calls each: ``call`` as
the engine times a call (events around it, synchronised after), ``host`` issued back to back,
synchronised once."""
import copy
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, timed, write_rows  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench import nn as rnn  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops import replay  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell=c, batch_size=32, input_size=128, hidden_size=128, loss="all_steps") for c in ("lstm", "gru")]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step") for c in ("rnn_tanh", "lstm")]


class Pooled:
    """``torch`` as the replay module sees it, with ``empty`` from a ring of 16 tensors per shape."""

    def __init__(self):
        self.rings = {}

    def empty(self, shape, dtype=None, device=None):
        key = (tuple(shape), dtype, str(device))
        ring = self.rings.get(key)
        if ring is None:
            ring = self.rings[key] = [[torch.empty(shape, dtype=dtype, device=device) for _ in range(16)], 0]
        ring[1] = (ring[1] + 1) % 16
        return ring[0][ring[1]]

    def __getattr__(self, name):
        return getattr(torch, name)


POOLED = Pooled()


def uses(form):
    """Set the module-wide switches for ``form``."""
    replay.torch = POOLED if form == "pooled" else torch


def drop_projection(module):
    """The module's forward replays without their first launch (where it allocates nothing)."""
    for key, (weights, launch, layer) in rnn._REPLAYS[module].items():
        if "train" not in key and layer.forward is not None and not layer.forward.launches[0][5]:
            shorter = copy.copy(layer.forward)
            shorter.launches = layer.forward.launches[1:]
            layer.forward = shorter


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="tf32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            lane = get_lane("triton")
            modules = {"torch-nn": get_lane("torch-nn").module_for(train, inputs.weights)}
            for form in ("triton", "pooled", "one-launch", "unwrapped"):
                modules[form] = lane.module_for(train, inputs.weights)
            unwrapped = modules["unwrapped"]
            unwrapped.forward = types.MethodType(rnn._KernelPath.forward._torchdynamo_orig_callable, unwrapped)
            modules["stand-in"] = StandIn(modules["torch-nn"]).cuda()
            for case in (train.replace(mode="forward"), train):
                forms = [f for f in modules if case.mode == "forward" or f != "one-launch"]
                steps = {f: module_call(modules[f], case, inputs)[0] for f in forms}
                for f, fn in steps.items():
                    uses(f)
                    for _ in range(20):
                        fn()
                if case.mode == "forward":
                    drop_projection(modules["one-launch"])
                got = {(f, k): [] for f in steps for k in ("call", "host")}
                order = forms + forms[::-1]
                for _ in range(8):
                    for f in order:
                        uses(f)
                        got[f, "call"].append(timed(steps[f], 100))
                        got[f, "host"].append(host_us(steps[f], 100))
                for f in forms:
                    row = {"case": case.key, "form": f, **{k: sorted(got[f, k])[len(got[f, k]) // 2] for k in ("call", "host")}}
                    rows.append(row)
                    print(f"{case.key} {f}: call {row['call']:.1f}, host {row['host']:.1f} µs", flush=True)
    uses("triton")
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
