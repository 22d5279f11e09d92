"""The replay handing out ``detach()`` of its own tensors (this tree) against the form before it
(afc7166's ``ops/replay.py`` and ``ops/replayed_layer.py``, given as a directory holding that
commit's ``src``), in one process: the engine's steps (``workload.module_call``: the forward under
``no_grad``; training: forward, the loss's gradient, ``autograd.grad``) of ``triton`` with each
form's modules, and ``torch-nn`` beside, each form its own module, at the issue's cases where the
host bounds the call (theano's LSTM and GRU at batch 32, hidden 128; glample's RNN and LSTM at
batch 20, hidden 100), TF32 and strict fp32.

The earlier form's two modules are loaded from its files into ``rnnbench.ops`` under other names
and put in ``rnnbench.nn``'s place for its calls (``nn._OPS``), so each form records and replays
with its own code. Before any timing every tensor a ``new`` step returns is compared with the
``old`` step's on the same inputs, bit for bit, over three calls each. Then 8 rounds (forms A B C
C B A) of 100 calls: ``call`` as the engine times a call (events around it, synchronised after),
medians. From the repository root, on a GPU::

    git archive afc7166 src | tar x -C OLD_DIR
    PYTHONPATH=src python3 benchmarks/results/h200/lean-replay/probes/against.py OLD_DIR/src OUT.jsonl
"""
import importlib.util
import json
import sys
from pathlib import Path

import torch

from rnnbench import nn as rnn_nn
from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=32, input_size=128, hidden_size=128, loss="all_steps") for c in ("lstm", "gru")]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step") for c in ("rnn_tanh", "lstm")]
FORMS = ("new", "old", "torch-nn")


def load_old(src: Path) -> dict:
    """afc7166's replay and replayed_layer modules, the second bound to the first."""
    import rnnbench.ops  # noqa: F401  (the package their relative imports resolve in)

    loaded = {}
    for name in ("replay", "replayed_layer"):
        spec = importlib.util.spec_from_file_location(f"rnnbench.ops._old_{name}", src / "rnnbench/ops" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        module.__package__ = "rnnbench.ops"
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        loaded[name] = module
    loaded["replayed_layer"].replay = loaded["replay"]
    return loaded


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


def main(old_src, out):
    new = {name: rnn_nn._ops(name) for name in ("replay", "replayed_layer")}
    old = load_old(Path(old_src))
    modules = {"new": new, "old": old, "torch-nn": new}
    rows = []
    for spec in CASES:
        for dtype in ("tf32", "fp32"):
            base = Case(**spec, seq_len=30, num_layers=1, dtype=dtype, mode="train", device="cuda")
            inputs = make_inputs(base)
            with matmul_mode(dtype):
                for case in (base.replace(mode="forward"), base):
                    steps = {}
                    for form in FORMS:
                        rnn_nn._OPS.update(modules[form])
                        lane = "torch-nn" if form == "torch-nn" else "triton"
                        steps[form] = module_call(get_lane(lane).module_for(case, inputs.weights), case, inputs)[0]
                        for _ in range(20):
                            steps[form]()
                    same = True
                    for _ in range(3):
                        rnn_nn._OPS.update(new)
                        a = [t.clone() for t in steps["new"]()]
                        rnn_nn._OPS.update(old)
                        b = [t.clone() for t in steps["old"]()]
                        same &= len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))
                    got = {f: [] for f in FORMS}
                    for _ in range(4):
                        for f in FORMS + FORMS[::-1]:
                            rnn_nn._OPS.update(modules[f])
                            got[f].append(timed(steps[f], 100))
                    rnn_nn._OPS.update(new)
                    row = {"case": case.key, "same": same, **{f: median(v) for f, v in got.items()}}
                    rows.append(row)
                    print(f"{case.key:58s} same {same}  new {row['new']:7.1f}  old {row['old']:7.1f}  "
                          f"torch-nn {row['torch-nn']:7.1f} µs  new/old {row['new'] / row['old']:.3f}  "
                          f"torch-nn/new {row['torch-nn'] / row['new']:.2f}  torch-nn/old "
                          f"{row['torch-nn'] / row['old']:.2f}", flush=True)
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
