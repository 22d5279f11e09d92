"""The module's eager call without ``torch.compiler.disable``'s wrapper (``rnnbench.nn``: only a
call while the compiler is at work takes it) against every call through it (as before), in one
process: the engine's steps (``workload.module_call``; forward under ``no_grad``; training:
forward, the loss's gradient, ``autograd.grad``) of ``torch-nn``, ``triton``, ``triton-wrapped``
(a module of its own whose ``forward`` is ``rnnbench.nn._UNTRACED_FORWARD``, the wrapped work) and
the stand-in layer that launches nothing (``call-floor/probes/train_floor.py``). On a GPU, from
the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/bounds/probes/unwrapped.py OUT.jsonl

Per case (the issue's TF32 cases: theano's LSTM and GRU at batch 32 and 128, hidden 128;
glample's RNN and LSTM at batch 20, hidden 100), medians over 8 rounds (forms in the order
A B C D D C B A) of 100 calls each: ``call`` as the engine times a call (events around it,
synchronised after), ``host`` issued back to back, synchronised once."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, timed, write_rows  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench import nn as rnn  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell=c, batch_size=b, input_size=128, hidden_size=128, loss="all_steps")
         for c in ("lstm", "gru") for b in (32, 128)]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step") for c in ("rnn_tanh", "lstm")]


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="tf32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            lane = get_lane("triton")
            modules = {"torch-nn": get_lane("torch-nn").module_for(train, inputs.weights),
                       "triton": lane.module_for(train, inputs.weights),
                       "triton-wrapped": lane.module_for(train, inputs.weights)}
            wrapped = modules["triton-wrapped"]
            wrapped.forward = lambda input, hx=None, lengths=None: rnn._UNTRACED_FORWARD(wrapped, input, hx, lengths)
            modules["stand-in"] = StandIn(modules["torch-nn"]).cuda()
            for case in (train.replace(mode="forward"), train):
                steps = {f: module_call(m, case, inputs)[0] for f, m in modules.items()}
                for fn in steps.values():
                    for _ in range(20):
                        fn()
                got = {(f, k): [] for f in steps for k in ("call", "host")}
                order = list(steps) + list(steps)[::-1]
                for _ in range(8):
                    for f in order:
                        got[f, "call"].append(timed(steps[f], 100))
                        got[f, "host"].append(host_us(steps[f], 100))
                for f in steps:
                    row = {"case": case.key, "form": f, **{k: sorted(got[f, k])[len(got[f, k]) // 2] for k in ("call", "host")}}
                    rows.append(row)
                    print(f"{case.key} {f}: call {row['call']:.1f}, host {row['host']:.1f} µs", flush=True)
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
