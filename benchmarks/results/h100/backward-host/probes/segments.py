"""Where the engine's training step spends host time beyond its forward and its backward alone
(``parts.py``: the step took 150-350 µs more than the two, more the more device work the form
has). On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/backward-host/probes/segments.py OUT.jsonl

The engine's step (``workload.module_call``'s ``train``) written out with a ``perf_counter`` between
its three parts: the module's call, the loss's gradient (``seeds``) and ``torch.autograd.grad``;
each step issued right after the last (no synchronisation), host µs of each part, medians over
8 rounds of 100 steps, the forms' order rotated (``parts.orders``). Variants: ``step`` as the
engine runs it; ``no-gc`` with Python's cyclic collector off; ``retained`` with the graph
retained by ``autograd.grad`` (freed when the step's outputs go, in the next part's time);
``synced`` with the device synchronised before each step (outside the parts: a step with the
device idle at its start)."""
import gc
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from parts import CASES, DEVICE, DTYPE, FORMS, orders  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.env import environment  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import _targets_on, finals_of, loss_gradient, make_inputs  # noqa: E402

ROUNDS, CALLS = 8, 100
VARIANTS = ("step", "no-gc", "retained", "synced")


def step_of(module, case, inputs, variant):
    """The engine's training step with its parts' host times added to ``spent`` (a list of 3)."""
    lstm = case.cell == "lstm"
    x, h0, c0 = (t.detach().to(DEVICE, torch.float32).requires_grad_(True) for t in (inputs.x, inputs.h0, inputs.c0))
    leaves = [x, h0, c0] if lstm else [x, h0]
    params = list(module.parameters())
    seeds = loss_gradient(_targets_on(inputs, case.device), case.loss, case.batch_size)
    retain = variant == "retained"
    clock = time.perf_counter

    def step(spent):
        t0 = clock()
        output, h_n = module(x, (h0, c0) if lstm else h0)
        finals = finals_of(case.cell, h_n)
        t1 = clock()
        tensors, gradients = seeds(output, finals)
        t2 = clock()
        grads = torch.autograd.grad(tensors, [*leaves, *params], grad_outputs=gradients, retain_graph=retain)
        t3 = clock()
        spent[0] += t1 - t0
        spent[1] += t2 - t1
        spent[2] += t3 - t2
        return output.detach(), grads

    return step


def run(step, variant):
    """Host µs a step of each part (forward, seeds, grad) and of the whole, over CALLS steps."""
    spent = [0.0, 0.0, 0.0]
    synced = variant == "synced"
    if variant == "no-gc":
        gc.disable()
    torch.cuda.synchronize() if DEVICE == "cuda" else None
    t0 = time.perf_counter()
    for _ in range(CALLS):
        if synced and DEVICE == "cuda":
            torch.cuda.synchronize()
        step(spent)
    total = time.perf_counter() - t0
    torch.cuda.synchronize() if DEVICE == "cuda" else None
    gc.enable()
    return [s / CALLS * 1e6 for s in spent] + [total / CALLS * 1e6]


def main(out):
    rows = [{"record": "env", **environment()}]
    for spec in CASES:
        case = Case(**spec, seq_len=30, dtype=DTYPE, mode="train", device=DEVICE)
        inputs = make_inputs(case)
        with matmul_mode(case.dtype):
            modules = {f: get_lane(f).module_for(case, inputs.weights) for f in FORMS[:2]}
            modules["stand-in"] = StandIn(modules["torch-nn"]).to(DEVICE)
            steps = {(f, v): step_of(modules[f], case, inputs, v) for f in FORMS for v in VARIANTS}
            for (f, v), step in steps.items():
                for _ in range(20):
                    step([0.0, 0.0, 0.0])
            got = {}
            for order in orders(list(FORMS), ROUNDS):
                for f in order:
                    for v in VARIANTS:
                        got.setdefault((f, v), []).append(run(steps[f, v], v))
            for (f, v), samples in got.items():
                med = [sorted(s[i] for s in samples)[len(samples) // 2] for i in range(4)]
                row = {"case": case.key, "form": f, "variant": v,
                       **dict(zip(("forward", "seeds", "grad", "whole"), med))}
                rows.append(row)
                print(f"{case.key} {f:8} {v:8}: forward {med[0]:6.1f} seeds {med[1]:6.1f} grad {med[2]:6.1f}"
                      f" whole {med[3]:7.1f} µs host", flush=True)
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main(sys.argv[1])
