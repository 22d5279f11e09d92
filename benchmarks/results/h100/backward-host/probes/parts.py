"""Where a training step's host time goes, half by half, for `torch-nn`, `triton` and a stand-in
layer that launches nothing (``call-floor/probes/train_floor.py``). On a GPU, from the repository
root::

    PYTHONPATH=src python3 benchmarks/results/h100/backward-host/probes/parts.py OUT_DIR

Per case (TF32: theano's LSTM at batch 32, hidden 128; glample's RNN at batch 20, hidden 100) and
form, host µs a call issued back to back (100 calls, synchronised once; medians of 8 rounds, the
forms' order rotated each round and reversed every other, so no form always follows another):

- ``step``: the engine's training step (``workload.module_call``: forward, the loss's gradient,
  ``torch.autograd.grad``);
- ``forward``: the module's call with gradients wanted, its graph dropped;
- ``backward``: ``torch.autograd.grad`` of one forward's outputs (all of them, random gradients) to
  the inputs and weights, the graph retained and run again each time;
- ``engine``: the same for one elementwise product (``x * 2``), the floor of any backward here.

Then, for ``triton`` and the stand-in, ``OUT_DIR/<case>-<form>-backward.prof.txt`` (cProfile's top 40
by own time over 300 backwards: read the order, not the sums) and ``-ops.txt`` (torch.profiler's
CPU ops of 50 backwards: counts and host time)."""
import cProfile
import io
import json
import os
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us  # noqa: E402
from train_floor import StandIn  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.env import environment  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell="lstm", batch_size=32, input_size=128, hidden_size=128, loss="all_steps"),
         dict(cell="rnn_tanh", batch_size=20, input_size=100, hidden_size=100, loss="last_step")]
FORMS = ("torch-nn", "triton", "stand-in")
ROUNDS, CALLS = 8, 100
DEVICE = os.environ.get("PROBE_DEVICE", "cuda")  # cpu: a dry run of the script itself (fp32)
DTYPE = "tf32" if DEVICE == "cuda" else "fp32"


def orders(forms, rounds):
    """Each round's order: the forms rotated by the round, reversed every other round."""
    for r in range(rounds):
        turned = forms[r % len(forms):] + forms[: r % len(forms)]
        yield turned if r % 2 == 0 else turned[::-1]


def parts(module, case, inputs):
    """The callables timed for one form: step, forward, backward, engine."""
    step = module_call(module, case, inputs)[0]
    lstm = case.cell == "lstm"
    x, h0, c0 = (t.detach().to(DEVICE, torch.float32).requires_grad_(True) for t in (inputs.x, inputs.h0, inputs.c0))
    hx = (h0, c0) if lstm else h0
    leaves = [x, h0, c0] if lstm else [x, h0]
    params = list(module.parameters())

    def forward():
        module(x, hx)

    output, h_n = module(x, hx)
    outs = [output, *(h_n if lstm else (h_n,))]
    seeds = [torch.randn_like(t) for t in outs]

    def backward():
        torch.autograd.grad(outs, [*leaves, *params], grad_outputs=seeds, retain_graph=True)

    doubled = x * 2
    seed = torch.randn_like(doubled)

    def engine():
        torch.autograd.grad(doubled, x, grad_outputs=seed, retain_graph=True)

    return {"step": step, "forward": forward, "backward": backward, "engine": engine}


def profiles(out, key, form, backward):
    profile = cProfile.Profile()
    torch.cuda.synchronize()
    profile.enable()
    for _ in range(300):
        backward()
    profile.disable()
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(40)
    (out / f"{key}-{form}-backward.prof.txt").write_text(text.getvalue())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(50):
            backward()
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40)
    (out / f"{key}-{form}-ops.txt").write_text(table)


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{"record": "env", **environment()}]
    for spec in CASES:
        case = Case(**spec, seq_len=30, dtype=DTYPE, mode="train", device=DEVICE)
        inputs = make_inputs(case)
        with matmul_mode(case.dtype):
            modules = {f: get_lane(f).module_for(case, inputs.weights) for f in FORMS[:2]}
            modules["stand-in"] = StandIn(modules["torch-nn"]).to(DEVICE)
            timed = {f: parts(modules[f], case, inputs) for f in FORMS}
            for fns in timed.values():
                for fn in fns.values():
                    for _ in range(20):
                        fn()
            got = {}
            for order in orders(list(FORMS), ROUNDS):
                for f in order:
                    for part, fn in timed[f].items():
                        got.setdefault((f, part), []).append(host_us(fn, CALLS))
            for (f, part), samples in got.items():
                samples.sort()
                row = {"case": case.key, "form": f, "part": part, "host_us": samples[len(samples) // 2]}
                rows.append(row)
                print(f"{case.key} {f} {part}: {row['host_us']:.1f} µs host", flush=True)
            for f in ("triton", "stand-in"):
                profiles(out, spec["cell"], f, timed[f]["backward"])
    with open(out / "parts.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
