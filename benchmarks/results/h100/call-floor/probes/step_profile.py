"""Where the host time of an eager step goes: the engine's own steps (``workload.lane_step``) for
``torch-nn`` and ``triton``, forward and training, at theano's TF32 LSTM (batch 32, hidden 128,
30 steps), under cProfile. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/call-floor/probes/step_profile.py OUT_DIR

Per lane and mode: the host µs a step issued back to back (no profiler; the device synchronised
before and after 300 steps, medians of 5), the synchronised µs a step as the engine times it
(CUDA events around each call), and ``OUT_DIR/<lane>-<mode>.prof.txt``: cProfile's top 45
functions by own time over 300 steps (cProfile's overhead inflates Python-heavy paths; read the
order, not the sums). For training, the host µs of its two halves alone as well: the module's
forward with gradients wanted (its graph dropped), and the backward (``torch.autograd.grad`` of
one forward's outputs, the graph retained and run again each time)."""
import cProfile
import io
import pstats
import sys
from pathlib import Path

import torch
from call_floor import host_us as floor_host_us, timed  # (this directory: the script's own, first on sys.path)

from rnnbench.cases import Case
from rnnbench.lanes import LANES
from rnnbench.precision import matmul_mode
from rnnbench.workload import lane_step, make_inputs

STEPS = 300


def host_us(fn):
    return floor_host_us(fn, STEPS)


def call_us(fn):
    # (the runs kept in call-floor/ also synchronised before each start event, outside what it times)
    return timed(fn, STEPS)


def halves(lane, inputs):
    """Host µs of a training step's forward alone and its backward alone (see the docstring)."""
    from rnnbench.lanes.registry import load_state_dict

    module = LANES[lane].build("lstm", 128, 128, 1).cuda()
    load_state_dict(module, {k: v.float() for k, v in inputs.weights.items()})
    x, h0, c0 = (t.to("cuda", torch.float32).requires_grad_(True) for t in (inputs.x, inputs.h0, inputs.c0))
    params = list(module.parameters())
    forward = sorted(host_us(lambda: module(x, (h0, c0))) for _ in range(5))[2]
    output, (h_n, c_n) = module(x, (h0, c0))
    seeds = [torch.randn_like(output), torch.randn_like(h_n), torch.randn_like(c_n)]

    def backward():
        torch.autograd.grad([output, h_n, c_n], [x, h0, c0, *params], grad_outputs=seeds, retain_graph=True)

    backward_us = sorted(host_us(backward) for _ in range(5))[2]
    return f"; forward alone {forward:.1f}, backward alone {backward_us:.1f} µs host"


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train = Case(cell="lstm", batch_size=32, seq_len=30, input_size=128, hidden_size=128, dtype="tf32",
                 mode="train", device="cuda")
    forward = Case(**{**vars(train), "mode": "forward"})
    inputs = make_inputs(train)
    lines = []
    with matmul_mode("tf32"):
        for lane in ("torch-nn", "triton"):
            for case in (forward, train):
                step = lane_step(LANES[lane], case, inputs)
                step.first_call()
                fn = step.fn
                for _ in range(20):
                    fn()
                hosts = sorted(host_us(fn) for _ in range(5))
                calls = call_us(fn)
                profile = cProfile.Profile()
                torch.cuda.synchronize()
                profile.enable()
                for _ in range(STEPS):
                    fn()
                profile.disable()
                torch.cuda.synchronize()
                text = io.StringIO()
                pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(45)
                (out / f"{lane}-{case.mode}.prof.txt").write_text(text.getvalue())
                line = f"{lane} {case.mode}: host {hosts[2]:.1f} µs a step, synchronised call {calls:.1f} µs"
                if case.mode == "train":
                    line += halves(lane, inputs)
                lines.append(line)
                print(line, flush=True)
    (out / "steps.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
