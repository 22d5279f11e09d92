"""A forward on FMA units launched by programmatic dependent launch (``ops/launch.PDL``) against
the plain launch, in one process: the engine's steps (``workload.module_call``: forward under
``no_grad``; training: forward, the loss's gradient, ``autograd.grad``) of ``triton`` built and
warmed with the switch on (``pdl``) and off (``plain``), and ``torch-nn``; each eagerly (its
replays, recorded under its own setting) and as a CUDA graph of 20 steps captured under it.

Before any timing, every tensor a ``pdl`` step returns is compared with the ``plain`` step's on
the same inputs: the kernels differ by the wait alone, so they must agree bit for bit. On a GPU,
from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/pdl/probes/pdl.py OUT.jsonl

Per case, medians over 4 rounds (forms A B C C B A) of 100 calls: ``call`` as the engine times a
call (events around it, synchronised after), ``graph`` a step of the replayed graph."""
import json
import sys

import torch

from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.ops import launch
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=b, input_size=128, hidden_size=128, loss="all_steps", dtype=d)
         for d in ("fp32", "tf32") for c in ("lstm", "gru") for b in (32, 128)]
CASES += [dict(cell=c, batch_size=20, input_size=100, hidden_size=100, loss="last_step", dtype=d)
          for d in ("fp32", "tf32") for c in ("rnn_tanh", "lstm", "gru")]
FORMS = {"pdl": True, "plain": False, "torch-nn": None}


def timed(fn, calls=100):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(calls):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    samples.sort()
    return samples[len(samples) // 2]


def graph_of(fn, steps=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(steps):
            fn()

    def run():
        g.replay()
    return run, steps


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(out):
    rows = []
    print(f"{'case':58s} {'mode':8s} eager call µs: pdl / plain / torch   graph µs: pdl / plain / torch")
    for spec in CASES:
        base = Case(**spec, seq_len=30, mode="train", device="cuda")
        inputs = make_inputs(base)
        with matmul_mode(base.dtype):
            for case in (base.replace(mode="forward"), base):
                steps, graphs = {}, {}
                for name, pdl in FORMS.items():
                    launch.PDL = bool(pdl)
                    lane = "torch-nn" if pdl is None else "triton"
                    module = get_lane(lane).module_for(case, inputs.weights)
                    fn = module_call(module, case, inputs)[0]
                    for _ in range(20):
                        fn()
                    steps[name] = (fn, bool(pdl))
                    graphs[name] = (graph_of(fn), bool(pdl))
                a, b = steps["pdl"][0](), steps["plain"][0]()
                same = all(torch.equal(x, y) for x, y in zip(a, b))
                torch.cuda.synchronize()
                got = {(n, k): [] for n in FORMS for k in ("call", "graph")}
                order = list(FORMS) + list(FORMS)[::-1]
                for _ in range(4):
                    for n in order:
                        fn, flag = steps[n]
                        launch.PDL = flag
                        got[n, "call"].append(timed(fn))
                        (run, per), _ = graphs[n]
                        got[n, "graph"].append(timed(run, 20) / per)
                launch.PDL = True
                row = {"case": case.key, "mode": case.mode, "bitwise_same": same,
                       **{f"{k}_{n}": median(got[n, k]) for n in FORMS for k in ("call", "graph")}}
                rows.append(row)
                print(f"{case.key[:58]:58s} {case.mode:8s} "
                      f"{row['call_pdl']:7.1f} / {row['call_plain']:7.1f} / {row['call_torch-nn']:7.1f}   "
                      f"{row['graph_pdl']:7.1f} / {row['graph_plain']:7.1f} / {row['graph_torch-nn']:7.1f}"
                      f"{'' if same else '   NOT BITWISE THE SAME'}", flush=True)
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print("\nratios plain/pdl (>1: pdl faster):")
    for r in rows:
        print(f"{r['case'][:58]:58s} {r['mode']:8s} eager {r['call_plain'] / r['call_pdl']:.3f}  "
              f"graph {r['graph_plain'] / r['graph_pdl']:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
