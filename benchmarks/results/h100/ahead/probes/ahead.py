"""A replayed call's outputs made ahead (``ops/replay.ALLOCATE_AHEAD``) against made between its
launches, in one process: the engine's steps (``workload.module_call``; forward under ``no_grad``,
training: forward, the loss's gradient, ``autograd.grad``) of ``torch-nn``, ``triton`` with the
switch on and off (``triton-late``) and the stand-in layer that launches nothing
(``call-floor/probes/train_floor.py``). On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/ahead/probes/ahead.py OUT.jsonl

Per case (the issue's TF32 cases: theano's LSTM and GRU at batch 32 and 128, hidden 128;
glample's RNN, LSTM and GRU at batch 20, hidden 100), medians over 8 rounds (forms in the order
A B C D D C B A) of 100 calls each: ``call`` as the engine times a call (events around it,
synchronised after), ``host`` issued back to back, synchronised once."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, timed, write_rows  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops import replay  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell=c, batch_size=b, input_size=128, hidden_size=128, loss="all_steps")
         for c in ("lstm", "gru") for b in (32, 128)]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step") for c in ("rnn_tanh", "lstm", "gru")]
AHEAD = {"triton": True, "triton-late": False}


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="tf32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            modules = {name: get_lane(name).module_for(train, inputs.weights) for name in ("torch-nn", "triton")}
            modules["triton-late"] = modules["triton"]
            modules["stand-in"] = StandIn(modules["torch-nn"]).cuda()
            for case in (train.replace(mode="forward"), train):
                steps = {name: module_call(m, case, inputs)[0] for name, m in modules.items()}
                for n, fn in steps.items():
                    replay.ALLOCATE_AHEAD = AHEAD.get(n, True)
                    for _ in range(20):
                        fn()
                got = {(n, k): [] for n in steps for k in ("call", "host")}
                order = list(steps) + list(steps)[::-1]
                for _ in range(8):
                    for n in order:
                        replay.ALLOCATE_AHEAD = AHEAD.get(n, True)
                        got[n, "call"].append(timed(steps[n], 100))
                        got[n, "host"].append(host_us(steps[n], 100))
                for n in steps:
                    row = {"case": case.key, "form": n, **{k: sorted(got[n, k])[len(got[n, k]) // 2] for k in ("call", "host")}}
                    rows.append(row)
                    print(f"{case.key} {n}: call {row['call']:.1f}, host {row['host']:.1f} µs", flush=True)
    replay.ALLOCATE_AHEAD = True
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
