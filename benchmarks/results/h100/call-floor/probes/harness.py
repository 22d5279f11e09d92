"""What the engine's harness adds to a timed call, and where: the same lane's step timed by the
engine's own clock and by leaner ones, in one process. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/call-floor/probes/harness.py OUT.jsonl

The engine times glample's RNN forward at 144 µs a call for cuDNN (p20,
``training-30fe950/glample-tf32-bf16.jsonl.gz``) where ``call_floor.py`` times the same module
call at 79-89 µs (``lean-b2cfa73/call_floor-new.txt``). Per case and lane, the step the engine
builds (``workload.lane_step``, the engine's inputs and weights), timed in rounds of 200 calls, the
forms in the order A B C D E E D C B A, medians over 12 rounds:

- ``engine``: ``timing.sample``, the engine's clock (two new events a call, a synchronize before);
- ``events_kept``: the same step between two events made once (``call_floor.timed``);
- ``module``: the bare ``module(x, hx)`` under ``no_grad`` (forward only), events made once;
- ``engine_gc_off``: ``engine`` with Python's garbage collector off;
- ``host``: the step issued back to back, synchronised once (host µs a call).
"""
import gc
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from call_floor import host_us, timed, write_rows  # noqa: E402

from rnnbench import timing  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import lane_step, make_inputs  # noqa: E402

CASES = [dict(cell="rnn_tanh", batch_size=20, input_size=100, hidden_size=100, loss="last_step"),
         dict(cell="lstm", batch_size=32, input_size=128, hidden_size=128, loss="all_steps")]


def engine(fn):
    samples = timing.sample(fn, "cuda", budget_s=10.0, runs=timing.RunCounts(200, 200))
    return sorted(samples)[len(samples) // 2] * 1e3


def engine_gc_off(fn):
    gc.disable()
    try:
        return engine(fn)
    finally:
        gc.enable()


def main(out):
    rows = []
    for spec in CASES:
        for mode in ("forward", "train"):
            case = Case(**spec, seq_len=30, dtype="tf32", mode=mode, device="cuda")
            inputs = make_inputs(case)
            with matmul_mode(case.dtype):
                for lane_name in ("torch-nn", "triton"):
                    lane = get_lane(lane_name)
                    step = lane_step(lane, case, inputs)
                    module = lane.module_for(case, inputs.weights)
                    x = inputs.x.to("cuda")
                    hx = inputs.h0.to("cuda")
                    hx = (hx, inputs.c0.to("cuda")) if case.cell == "lstm" else hx

                    def bare():
                        with torch.no_grad():
                            return module(x, hx)

                    forms = {"engine": lambda: engine(step.fn), "events_kept": lambda: timed(step.fn),
                             "engine_gc_off": lambda: engine_gc_off(step.fn), "host": lambda: host_us(step.fn)}
                    if mode == "forward":
                        forms["module"] = lambda: timed(bare)
                    for _ in range(20):
                        step.fn()
                        bare()
                    got = {k: [] for k in forms}
                    order = list(forms) + list(forms)[::-1]
                    for _ in range(12):
                        for name in order:
                            got[name].append(forms[name]())
                    row = {"case": case.key, "lane": lane_name}
                    row.update({k: sorted(v)[len(v) // 2] for k, v in got.items()})
                    rows.append(row)
                    print(f"{case.key} {lane_name}: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()
                                                                   if isinstance(v, float)) + " µs", flush=True)
                    step.close()
    write_rows(out, rows)

if __name__ == "__main__":
    main(sys.argv[1])
