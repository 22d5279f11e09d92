"""The LSTM's and GRU's forward on FMA units producing its projection in its own launch against the
projection launched before it, in one process: the engine's steps (forward under no_grad; training:
forward, the loss's gradient, autograd.grad) of ``triton`` under plan_override(forward_produce=True)
and (False), each form its own module, torch-nn beside; forms A B C C B A over ROUNDS rounds of 100
calls, each as the engine times a call (events around it, synchronised before), medians. Before any
timing, every tensor of a producing step against the other form's: the largest relative error.
PYTHONPATH=src python3 ab/produce.py OUT.jsonl [ROUNDS]"""
import json, statistics, sys
import torch
from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.ops.recurrence import layer_launch, plan_override, produces
from rnnbench.precision import TORCH_DTYPE, matmul_mode
from rnnbench.verify import relative_error
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=32, seq_len=30, input_size=128, hidden_size=128, loss="all_steps") for c in ("gru", "lstm")]
CASES += [dict(cell=c, batch_size=20, seq_len=30, input_size=100, hidden_size=100, loss="last_step") for c in ("lstm", "gru")]
FORMS = ("produce", "two", "torch-nn")


def timed(fn, calls=100):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    xs = []
    for _ in range(calls):
        torch.cuda.synchronize(); s.record(); fn(); e.record(); e.synchronize(); xs.append(s.elapsed_time(e) * 1e3)
    return statistics.median(xs)


def main(out, rounds=4):
    sink = open(out, "w")
    for spec in CASES:
        for dtype in ("fp32", "tf32", "bf16"):
            for mode in ("forward", "train"):
                case = Case(**spec, num_layers=1, dtype=dtype, mode=mode, device="cuda")
                inputs = make_inputs(case)
                with matmul_mode(dtype):
                    launch = layer_launch(case.cell, case.batch_size, case.hidden_size, TORCH_DTYPE[dtype], torch.device("cuda"))
                    x = torch.empty(case.seq_len, case.batch_size, case.input_size, device="cuda")
                    produced = produces(launch, x)
                    steps = {}
                    for f in FORMS:
                        with plan_override(forward_produce=f != "two"):
                            m = get_lane("torch-nn" if f == "torch-nn" else "triton").module_for(case, inputs.weights)
                            steps[f] = module_call(m, case, inputs)[0]
                            for _ in range(10):
                                steps[f]()
                    with plan_override(forward_produce=True):
                        a = [t.clone() for t in steps["produce"]()]
                    with plan_override(forward_produce=False):
                        b = [t.clone() for t in steps["two"]()]
                    err = max(relative_error(p, q) for p, q in zip(a, b))
                    got = {f: [] for f in FORMS}
                    for _ in range(rounds):
                        for f in FORMS + FORMS[::-1]:
                            with plan_override(forward_produce=f != "two"):
                                got[f].append(timed(steps[f]))
                row = {"case": case.key, "produced": None if produced is None else [produced.tiles.bn, produced.programs],
                       "err": err, **{f: statistics.median(v) for f, v in got.items()}}
                sink.write(json.dumps(row) + "\n"); sink.flush()
                print(f"{case.key:58s} {row['produced']} err {err:.1e} produce {row['produce']:7.1f} two {row['two']:7.1f} "
                      f"torch-nn {row['torch-nn']:7.1f} p/two {row['produce'] / row['two']:.3f} "
                      f"tn/p {row['torch-nn'] / row['produce']:.2f} tn/two {row['torch-nn'] / row['two']:.2f}", flush=True)
                del steps
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], *[int(a) for a in sys.argv[2:3]])
