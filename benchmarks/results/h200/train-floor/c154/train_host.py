"""Where the engine's eager training step spends its host time at glample's size (one GPU).

    PYTHONPATH=src python3 ab/train_host.py OUT

For each case and lane: the engine's step (workload.lane_step) timed as host µs per call (no
sync), synchronised µs per call, and split by wrapping torch.autograd.grad, our layer's backward
(replayed_layer._backward) and its normal backward (RecurrentLayer.gradients) with timers.
"""
import json
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = ["src", "benchmarks"]
import torch  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.ops import recurrence, replayed_layer  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import lane_step, make_inputs  # noqa: E402

CASES = [("rnn_tanh", 20, 30, 100, 100, "tf32"), ("lstm", 20, 30, 100, 100, "tf32"), ("rnn_tanh", 20, 30, 100, 100, "bf16")]
acc: dict[str, list[float]] = {}


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc.setdefault(name, []).append(time.perf_counter() - t0)
    return wrapper


torch.autograd.grad = timed("autograd_grad", torch.autograd.grad)
replayed_layer._backward = timed("layer_backward", replayed_layer._backward)
recurrence.RecurrentLayer.gradients = staticmethod(timed("normal_gradients", recurrence.RecurrentLayer.gradients))


def host(fn, calls):
    fn()
    torch.cuda.synchronize()
    acc.clear()
    times = []
    for k in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if k % 10 == 9:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    parts = {n: 1e6 * statistics.median(v) for n, v in acc.items()}
    counts = {n: len(v) for n, v in acc.items()}
    return 1e6 * statistics.median(times), parts, counts


def synced(fn, calls):
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for cell, b, t, i, h, dt in CASES:
        case = Case(cell=cell, batch_size=b, seq_len=t, input_size=i, hidden_size=h, dtype=dt, mode="train",
                    device="cuda", loss="last_step")
        inputs = make_inputs(case)
        with matmul_mode(dt):
            for rnd in range(3):
                for name in ("torch-nn", "triton") if rnd % 2 == 0 else ("triton", "torch-nn"):
                    step = lane_step(LANES[name], case, inputs)
                    for _ in range(20):
                        step.fn()
                    host_us, parts, counts = host(step.fn, 300)
                    row = dict(case=f"{cell} {dt}", lane=name, round=rnd, host_us=host_us, synced_us=synced(step.fn, 300),
                               parts=parts, counts=counts)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    step.close()
    (out / "train_host.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
