"""The replay past hidden 128 (a layer on tensor cores), against the normal path it stands in
for, in one process: the engine's steps (``workload.module_call``: the forward under ``no_grad``;
training: forward, the loss's gradient, ``autograd.grad``) of ``triton`` with the replay on
(``replay``) and off (``normal``: ``ops.replay.ENABLED`` false, which before this change was the
path of every call past hidden 128), each form its own module, and ``torch-nn`` beside; at the
seed suites' depth-1 cases past hidden 128 (glample's hidden 500, theano's 512 and 1024,
fastrnns), TF32 and strict fp32.

Before any timing, every tensor a ``replay`` step returns is compared with the ``normal`` step's
on the same inputs, bit for bit, over three calls; ``recorded`` says which halves have a replay
(forward; and for training the backwards recorded). Then ROUNDS rounds (forms A B C C B A) of CALLS
calls, each as the engine times a call (events around it, synchronised before), medians. From the
repository root, on a GPU::

    PYTHONPATH=src python3 PROBE OUT.jsonl [ONLY [ROUNDS [DTYPES]]]

``ONLY``: a comma list of words; only the cases whose key holds one of them (default: all).
``ROUNDS``: rounds of A B C C B A (default 3). ``DTYPES``: a comma list (default tf32,fp32).
"""
import json
import sys

import torch

from rnnbench import nn as rnn_nn
from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.ops import replay
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=20, seq_len=30, input_size=100, hidden_size=500, loss="last_step")
         for c in ("rnn_tanh", "lstm")]
CASES += [dict(cell=c, batch_size=b, seq_len=30, input_size=h, hidden_size=h, loss="all_steps")
          for h in (512, 1024) for c in ("lstm", "gru") for b in (32, 128)]
CASES += [dict(cell="lstm", batch_size=64, seq_len=100, input_size=512, hidden_size=512, loss="all_steps")]
FORMS = ("replay", "normal", "torch-nn")


def timed(fn, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def recorded(module):
    kept = rnn_nn._REPLAYS.get(module)
    if not kept:
        return "none"
    return "; ".join(f"forward {layer.forward is not None}, backwards {len(layer.backwards)}, refused {layer.refused}"
                     for _, _, layer in kept.values())


def main(out, only="", rounds=3, dtypes="tf32,fp32", calls=30):
    sink = open(out, "w")
    for spec in CASES:
        for dtype in dtypes.split(","):
            base = Case(**spec, num_layers=1, dtype=dtype, mode="train", device="cuda")
            if only and not any(w in base.replace(mode=m).key for w in only.split(",") for m in ("forward", "train")):
                continue
            inputs = make_inputs(base)
            with matmul_mode(dtype):
                for case in (base.replace(mode="forward"), base):
                    if only and not any(w in case.key for w in only.split(",")):
                        continue
                    steps, modules = {}, {}
                    for form in FORMS:
                        replay.ENABLED = form != "normal"
                        modules[form] = get_lane("torch-nn" if form == "torch-nn" else "triton").module_for(case, inputs.weights)
                        steps[form] = module_call(modules[form], case, inputs)[0]
                        for _ in range(10):
                            steps[form]()
                    same = True
                    for _ in range(3):
                        replay.ENABLED = True
                        a = [t.clone() for t in steps["replay"]()]
                        replay.ENABLED = False
                        b = [t.clone() for t in steps["normal"]()]
                        same &= len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))
                    got = {f: [] for f in FORMS}
                    for _ in range(rounds):
                        for f in FORMS + FORMS[::-1]:
                            replay.ENABLED = f != "normal"
                            got[f].append(timed(steps[f], calls))
                    replay.ENABLED = True
                    row = {"case": case.key, "same": same, "recorded": recorded(modules["replay"]),
                           **{f: median(v) for f, v in got.items()}}
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                    print(f"{case.key:62s} same {same!s:5s} replay {row['replay']:8.1f} normal {row['normal']:8.1f} "
                          f"torch-nn {row['torch-nn']:8.1f} µs  replay/normal {row['replay'] / row['normal']:.3f}  "
                          f"torch-nn/replay {row['torch-nn'] / row['replay']:.2f}  torch-nn/normal "
                          f"{row['torch-nn'] / row['normal']:.2f}  [{row['recorded']}]", flush=True)
                    del steps, modules
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:3], *[int(a) for a in sys.argv[3:4]], *sys.argv[4:5])
