"""Probe: is the engine's eager `triton` time at FlashRNN's fp16 forward the module's own?

    PYTHONPATH=src python3 THIS OUT_DIR

Why: in one process of its own (flash_dtypes.py) our eager fp16 forward at batch 16, 1024 steps,
hidden 768 took 2.51 ms once warm, but 2.63-2.69 ms in every engine run (`rnnbench run`), while
cuDNN's took 2.22-2.36 in both. Here, in one process, each timed with the engine's own timer
(``timing.sample``: events after a synchronize, median of 30 after the engine's warm-up):

- ``step``: the engine's step for the lane (``workload.lane_step``: the module built from the
  case's canonical weights, the engine's inputs, its no-grad forward returning the final states);
- ``module``: a module of our own (``rnnbench.nn.LSTM(..., backend="triton")``, fp16, random
  inputs) called directly;
- ``step after graph``: the engine's step again, each turn of 18 calls after 18 replays of the
  ``triton-graph`` lane's step (as a run of the two lanes in turns does);

in the order step, module, module, step, then the turns; and the same for ``torch-nn``.
Writes OUT_DIR/engine_step.txt."""
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402
from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import RunCounts  # noqa: E402
from rnnbench.workload import lane_step, make_inputs  # noqa: E402

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
lines = []


def say(text):
    lines.append(text)
    print(text, flush=True)


case = Case(cell="lstm", batch_size=16, seq_len=1024, input_size=768, hidden_size=768, dtype="fp16",
            mode="forward", device="cuda")
inputs = make_inputs(case)


def step_ms(step, calls=30):
    step.sample(0.0, RunCounts(1, 1))
    return statistics.median(step.sample(0.0, RunCounts(calls, calls)))


def module_ms(m, x, hx, calls=30):
    from rnnbench.timing import sample
    with torch.no_grad():
        fn = lambda: m(x, hx)  # noqa: E731
        fn()
        return statistics.median(sample(fn, "cuda", budget_s=0.0, runs=RunCounts(calls, calls)))


with matmul_mode("fp16"):
    for lane_name, build in (("triton", lambda: ours.LSTM(768, 768, backend="triton")),
                             ("torch-nn", lambda: torch.nn.LSTM(768, 768))):
        step = lane_step(LANES[lane_name], case, inputs)
        step.first_call()
        torch.manual_seed(0)
        m = build().to("cuda", torch.float16)
        x = torch.randn(1024, 16, 768, device="cuda", dtype=torch.float16)
        hx = tuple(torch.randn(1, 16, 768, device="cuda", dtype=torch.float16) for _ in range(2))
        for _ in range(5):
            module_ms(m, x, hx, 3)
        a1, b1, b2, a2 = step_ms(step), module_ms(m, x, hx), module_ms(m, x, hx), step_ms(step)
        say(f"{lane_name}: step {a1:.4f} {a2:.4f} ms | module {b1:.4f} {b2:.4f} ms")
        graph_name = f"{lane_name}-graph"
        graph = lane_step(LANES[graph_name], case, inputs)
        graph.first_call()
        turns = []
        for _ in range(10):
            graph.sample(0.0, RunCounts(18, 18))
            turns.append(step_ms(step, 18))
        say(f"{lane_name}: step after {graph_name}, 10 turns of 18: median {statistics.median(turns):.4f} ms "
            f"(turns {', '.join(f'{t:.3f}' for t in turns)})")
        solo = [step_ms(step, 18) for _ in range(10)]
        say(f"{lane_name}: step alone, 10 turns of 18: median {statistics.median(solo):.4f} ms")
        step.close()
        graph.close()
        del m, x, hx, step, graph
        torch.cuda.empty_cache()
(OUT / "engine_step.txt").write_text("\n".join(lines) + "\n")
