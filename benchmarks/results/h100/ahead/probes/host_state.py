"""Whether a process's host calls get slower after its first training step: the stand-in layer's
forward (``call-floor/probes/train_floor.py``: the engine's forward step on a layer that launches
nothing), a bare ``torch.empty`` on the GPU and a pure-Python loop, host time a call (issued back
to back, synchronised once; median of 8 rounds of 200), in a fresh process, after one eager training
step of cuDNN's LSTM (``torch.autograd.grad``), and after ``gc.freeze()``. On a GPU, from the
repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/ahead/probes/host_state.py OUT.jsonl
"""
import gc
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, write_rows  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402


def python_us(calls=200):
    t0 = time.perf_counter()
    for _ in range(calls):
        sum(range(100))
    return (time.perf_counter() - t0) / calls * 1e6


def main(out):
    case = Case(cell="lstm", batch_size=32, seq_len=30, input_size=128, hidden_size=128, dtype="tf32",
                mode="forward", device="cuda", loss="all_steps")
    inputs = make_inputs(case)
    lstm = torch.nn.LSTM(128, 128).cuda()
    forward = module_call(StandIn(lstm).cuda(), case, inputs)[0]
    empty = lambda: torch.empty(3, device="cuda")  # noqa: E731
    train = module_call(lstm, case.replace(mode="train"), inputs)[0]
    rows = []

    def measure(state):
        for _ in range(20):
            forward()
        got = {"stand-in forward": [], "torch.empty": [], "python loop": []}
        for _ in range(8):
            got["stand-in forward"].append(host_us(forward))
            got["torch.empty"].append(host_us(empty))
            got["python loop"].append(python_us())
        for what, v in got.items():
            rows.append({"state": state, "what": what, "host_us": sorted(v)[4]})
            print(f"{state:28s} {what:18s} {sorted(v)[4]:7.2f} µs", flush=True)

    measure("fresh")
    measure("fresh, again")
    train()
    torch.cuda.synchronize()
    measure("after one training step")
    for _ in range(50):
        train()
    torch.cuda.synchronize()
    measure("after 51 training steps")
    gc.collect()
    gc.freeze()
    measure("after gc.freeze")
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
