"""The replays' outputs taken from earlier calls let go of (``replay.REUSE``) against each made
afresh, in one process: the engine's steps (``workload.module_call``: the forward under
``no_grad``; training: forward, the loss's gradient, ``autograd.grad``) of ``triton`` with the
switch on (``reuse``) and off (``fresh``), and ``torch-nn`` beside, each form its own module, at the
issue's TF32 cases where the host bounds the call (theano's LSTM and GRU at batch 32, hidden 128;
glample's RNN and LSTM at batch 20, hidden 100).

Before any timing, every tensor a ``reuse`` step returns is compared with the ``fresh`` step's on
the same inputs, bit for bit, over three calls each (the third takes the first's memory). Then 8
rounds (forms A B C C B A) of 100 calls: ``call`` as the engine times a call (events around it,
synchronised after), medians. From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h200/reuse/probes/reuse.py OUT.jsonl
"""
import json
import sys

import torch

from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.ops import replay
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=32, input_size=128, hidden_size=128, loss="all_steps") for c in ("lstm", "gru")]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step") for c in ("rnn_tanh", "lstm")]
FORMS = {"reuse": True, "fresh": False, "torch-nn": None}


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


def main(out):
    rows = []
    for spec in CASES:
        base = Case(**spec, seq_len=30, num_layers=1, dtype="tf32", mode="train", device="cuda")
        inputs = make_inputs(base)
        with matmul_mode("tf32"):
            for case in (base.replace(mode="forward"), base):
                steps = {}
                for form, reuse in FORMS.items():
                    replay.REUSE = bool(reuse)
                    lane = "torch-nn" if reuse is None else "triton"
                    steps[form] = module_call(get_lane(lane).module_for(case, inputs.weights), case, inputs)[0]
                    for _ in range(20):
                        steps[form]()
                same = True
                for _ in range(3):
                    replay.REUSE = True
                    a = [t.clone() for t in steps["reuse"]()]
                    replay.REUSE = False
                    b = [t.clone() for t in steps["fresh"]()]
                    same &= len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))
                got = {f: [] for f in FORMS}
                order = list(FORMS) + list(FORMS)[::-1]
                for _ in range(4):
                    for f in order:
                        replay.REUSE = FORMS[f] is not False
                        got[f].append(timed(steps[f], 100))
                row = {"case": case.key, "same": same, **{f: median(v) for f, v in got.items()}}
                rows.append(row)
                print(f"{case.key:58s} same {same}  reuse {row['reuse']:7.1f}  fresh {row['fresh']:7.1f}  "
                      f"torch-nn {row['torch-nn']:7.1f} µs  reuse/fresh {row['reuse'] / row['fresh']:.3f}  "
                      f"torch-nn/reuse {row['torch-nn'] / row['reuse']:.2f}  torch-nn/fresh "
                      f"{row['torch-nn'] / row['fresh']:.2f}", flush=True)
    replay.REUSE = True
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
