"""The bound of one launch for the gated FMA forwards: the replayed eager forward (projection +
recurrence, two launches) against the same replay with its first launch (the projection) made a
Python no-op (wrong results: timing only), and torch-nn beside; forms A B C C B A; the engine's
clock. Then each kernel's device time from torch.profiler (CUPTI).
PYTHONPATH=src python3 ab/bound.py OUT.jsonl [ROUNDS]"""
import json, statistics, sys
import torch
from torch.profiler import profile, ProfilerActivity
from rnnbench import nn as rnn_nn
from rnnbench.cases import Case
from rnnbench.lanes.registry import get_lane
from rnnbench.precision import matmul_mode
from rnnbench.workload import make_inputs, module_call

CASES = [dict(cell=c, batch_size=b, seq_len=30, input_size=128, hidden_size=128, loss="all_steps")
         for c in ("gru", "lstm") for b in (32, 128)]
CASES += [dict(cell="lstm", batch_size=20, seq_len=30, input_size=100, hidden_size=100, loss="last_step"),
          dict(cell="gru", batch_size=20, seq_len=30, input_size=100, hidden_size=100, loss="last_step")]
FORMS = ("two", "one", "torch-nn")


def timed(fn, calls=100):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    xs = []
    for _ in range(calls):
        torch.cuda.synchronize(); s.record(); fn(); e.record(); e.synchronize(); xs.append(s.elapsed_time(e) * 1e3)
    return statistics.median(xs)


def the_replay(module):
    (_, _, layer), = rnn_nn._REPLAYS[module].values()
    return layer.forward


def main(out, rounds=4):
    sink = open(out, "w")
    for spec in CASES:
        for dtype in ("fp32", "tf32", "bf16"):
            case = Case(**spec, num_layers=1, dtype=dtype, mode="forward", device="cuda")
            inputs = make_inputs(case)
            with matmul_mode(dtype):
                mods = {f: get_lane("torch-nn" if f == "torch-nn" else "triton").module_for(case, inputs.weights) for f in FORMS}
                steps = {f: module_call(mods[f], case, inputs)[0] for f in FORMS}
                for f in FORMS:
                    for _ in range(10):
                        steps[f]()
                r = the_replay(mods["one"])
                n = len(r.launches)
                if n == 2:
                    first = r.launches[0]
                    r.launches = ((lambda *a: None, *first[1:]), *r.launches[1:])
                got = {f: [] for f in FORMS}
                for _ in range(rounds):
                    for f in FORMS + FORMS[::-1]:
                        got[f].append(timed(steps[f]))
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(30):
                        steps["two"]()
                    torch.cuda.synchronize()
                kern = {}
                for ev in prof.events():
                    if ev.device_type == torch.autograd.DeviceType.CUDA:
                        kern.setdefault(ev.name[:40], []).append(ev.device_time)
                row = {"case": case.key, "launches": n, **{f: statistics.median(v) for f, v in got.items()},
                       "kernels": {k: statistics.median(v) for k, v in kern.items()}}
                sink.write(json.dumps(row) + "\n"); sink.flush()
                print(f"{case.key:58s} n{n} two {row['two']:6.1f} one {row['one']:6.1f} torch-nn {row['torch-nn']:6.1f} "
                      f"one/two {row['one'] / row['two']:.3f} tn/two {row['torch-nn'] / row['two']:.2f} "
                      f"tn/one {row['torch-nn'] / row['one']:.2f} | "
                      + " ".join(f"{k[:18]}={v:.1f}" for k, v in row["kernels"].items()), flush=True)
                del steps, mods
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], *[int(a) for a in sys.argv[2:3]])
