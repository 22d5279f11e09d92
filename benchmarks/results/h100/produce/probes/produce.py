"""The RNN's forward on FMA units with its projection computed in its own launch (``Plan.produce``)
against the projection launched before it, in one process: the engine's steps
(``workload.module_call``: forward under ``no_grad``; training: forward, the loss's gradient,
``autograd.grad``) of ``triton`` built and warmed under ``plan_override(forward_produce=...)`` on
(``produce``) and off (``two``), and ``torch-nn``; each eagerly (its replays, recorded under its own
setting) and as a CUDA graph of 20 steps captured under it.

Before any timing, every tensor a ``produce`` step returns is compared with the ``two`` step's on
the same inputs: the producers compute the projection kernel's own tiles, so they must agree bit
for bit. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/produce/probes/produce.py OUT.jsonl

Per case, medians over 4 rounds (forms A B C C B A) of 100 calls: ``call`` as the engine times a
call (events around it, synchronised after), ``graph`` a step of the replayed graph."""
import json
import sys
from pathlib import Path

import torch

# The timing helpers of the dependent launch's probe, which this one follows form for form.
sys.path.insert(0, str(Path(__file__).parents[2] / "pdl" / "probes"))
from pdl import graph_of, median, timed  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops.recurrence import layer_launch, plan_override  # noqa: E402
from rnnbench.precision import TORCH_DTYPE, matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(batch_size=20, input_size=100, hidden_size=100, seq_len=30, loss="last_step", dtype=d)
         for d in ("fp32", "tf32", "bf16")]
CASES += [dict(batch_size=b, input_size=128, hidden_size=128, seq_len=30, loss="all_steps", dtype=d)
          for d in ("fp32", "tf32") for b in (32, 100)]
CASES += [dict(batch_size=20, input_size=100, hidden_size=100, seq_len=300, loss="last_step", dtype="fp32")]
FORMS = {"produce": True, "two": False, "torch-nn": None}


def main(out):
    rows = []
    print(f"{'case':58s} {'mode':8s} eager call µs: produce / two / torch   graph µs: produce / two / torch")
    for spec in CASES:
        base = Case(cell="rnn_tanh", **spec, mode="train", device="cuda")
        inputs = make_inputs(base)
        with matmul_mode(base.dtype):
            for case in (base.replace(mode="forward"), base):
                steps, graphs = {}, {}
                for name, produce in FORMS.items():
                    lane = "torch-nn" if produce is None else "triton"
                    with plan_override(forward_produce=bool(produce)):
                        if produce is not None:
                            plan = layer_launch("rnn_tanh", case.batch_size, case.hidden_size,
                                                TORCH_DTYPE[case.dtype], torch.device("cuda")).forward
                            assert plan.fma and plan.produce == produce, (name, plan)
                        module = get_lane(lane).module_for(case, inputs.weights)
                        fn = module_call(module, case, inputs)[0]
                        for _ in range(20):
                            fn()
                        steps[name] = fn
                        graphs[name] = graph_of(fn)
                with plan_override(forward_produce=True):
                    a = steps["produce"]()
                with plan_override(forward_produce=False):
                    b = steps["two"]()
                same = all(torch.equal(x, y) for x, y in zip(a, b))
                torch.cuda.synchronize()
                got = {(n, k): [] for n in FORMS for k in ("call", "graph")}
                order = list(FORMS) + list(FORMS)[::-1]
                for _ in range(4):
                    for n in order:
                        with plan_override(forward_produce=bool(FORMS[n])):
                            got[n, "call"].append(timed(steps[n]))
                        run, per = graphs[n]
                        got[n, "graph"].append(timed(run, 20) / per)
                row = {"case": case.key, "mode": case.mode, "bitwise_same": same,
                       **{f"{k}_{n}": median(got[n, k]) for n in FORMS for k in ("call", "graph")}}
                rows.append(row)
                print(f"{case.key[:58]:58s} {case.mode:8s} "
                      f"{row['call_produce']:7.1f} / {row['call_two']:7.1f} / {row['call_torch-nn']:7.1f}   "
                      f"{row['graph_produce']:7.1f} / {row['graph_two']:7.1f} / {row['graph_torch-nn']:7.1f}"
                      f"{'' if same else '   NOT BITWISE THE SAME'}", flush=True)
    with open(out, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print("\nratios two/produce (>1: produce faster); torch-nn/produce and torch-nn/two, eager:")
    for r in rows:
        print(f"{r['case'][:58]:58s} {r['mode']:8s} eager {r['call_two'] / r['call_produce']:.3f}  "
              f"graph {r['graph_two'] / r['graph_produce']:.3f}   vs torch-nn eager "
              f"{r['call_torch-nn'] / r['call_produce']:.2f} / {r['call_torch-nn'] / r['call_two']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
