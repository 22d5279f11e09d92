"""The engine's eager steps with strict fp32's split products taken (``gradients.SPLIT_MIN_FLOP``,
``projection.SPLIT_MIN_FLOP`` as the tree has them: ``triton``) and not taken (both limits
infinite: ``triton-unsplit``, the 3xTF32 tiles and the torch calls), in one process, beside
``torch-nn``: what the split products' extra launches cost or save a call, where the engine's
runs of two trees in turn were too noisy to say. Each form its own module (its own replays,
recorded under its limits). From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h100/fp16-products/probes/paths.py OUT.jsonl

Per case (theano's depth-1 strict fp32 layers at batch 32 and 128, hidden 512 and 1024), medians
over 8 rounds (forms A B C C B A) of the engine's call timing (events around each call,
synchronised after; ``call-floor/probes/call_floor.timed``), µs a call."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import timed, write_rows  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops import gradients, projection  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [dict(cell=c, batch_size=b, input_size=h, hidden_size=h, loss="all_steps")
         for c in ("lstm", "gru") for b in (32, 128) for h in (512, 1024)]
LIMITS = {"triton": (gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP), "triton-unsplit": (float("inf"),) * 2,
          "torch-nn": (float("inf"),) * 2}


def limits(form):
    gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP = LIMITS[form]


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="fp32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            modules = {"torch-nn": get_lane("torch-nn").module_for(train, inputs.weights)}
            for form in ("triton", "triton-unsplit"):
                modules[form] = get_lane("triton").module_for(train, inputs.weights)
            for case in (train.replace(mode="forward"), train):
                steps = {name: module_call(m, case, inputs)[0] for name, m in modules.items()}
                calls = 100 if case.mode == "forward" else 40
                for n, fn in steps.items():
                    limits(n)
                    for _ in range(10):
                        fn()
                got = {n: [] for n in steps}
                order = list(steps) + list(steps)[::-1]
                for _ in range(8):
                    for n in order:
                        limits(n)
                        got[n].append(timed(steps[n], calls))
                for n in steps:
                    row = {"case": case.key, "form": n, "call_us": sorted(got[n])[len(got[n]) // 2],
                           "rounds_us": got[n]}
                    rows.append(row)
                    print(f"{case.key} {n}: {row['call_us']:.1f} µs", flush=True)
    limits("triton")
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
