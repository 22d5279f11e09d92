"""Whether eager calls now pay for strict fp32's split products at the sizes only graphs took them
at: the engine's eager steps, one process, each form its own module (its own replays), in the
rounds of ``fp16-products/probes/paths.py``: ``triton`` (the tree's limits), ``triton-low`` (the
eager limits lowered to the captured ones: the projection's ``SPLIT_MIN_FLOP["eager"]`` to its
``"captured"`` value, the gradients' weight-tiles rule dropped), ``triton-unsplit`` (never split)
and ``torch-nn``. From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h100/split-launches/probes/limits.py OUT.jsonl

Per case (theano's depth-1 strict fp32 layers at batch 32 and 128, hidden 512 and 1024), the median
of 8 (4 rounds of forms A B C D D C B A) of the engine's call timing, µs a call."""
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
NEVER = float("inf")
LOW = {"captured": projection.SPLIT_MIN_FLOP["captured"], "eager": projection.SPLIT_MIN_FLOP["captured"]}
# form: (gradients' FLOPs, projection's FLOPs, gradients' eager weight tiles)
LIMITS = {"triton": (gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES),
          "triton-low": (gradients.SPLIT_MIN_FLOP, LOW, 0),
          "triton-unsplit": (NEVER, {"captured": NEVER, "eager": NEVER}, 0),
          "torch-nn": (NEVER, {"captured": NEVER, "eager": NEVER}, 0)}


def limits(form):
    gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES = LIMITS[form]


def main(out):
    rows = []
    for spec in CASES:
        train = Case(**spec, seq_len=30, dtype="fp32", mode="train", device="cuda")
        inputs = make_inputs(train)
        with matmul_mode(train.dtype):
            modules = {n: get_lane("torch-nn" if n == "torch-nn" else "triton").module_for(train, inputs.weights)
                       for n in LIMITS}
            for case in (train.replace(mode="forward"), train):
                steps = {name: module_call(m, case, inputs)[0] for name, m in modules.items()}
                calls = 100 if case.mode == "forward" else 40
                for n, fn in steps.items():
                    limits(n)
                    for _ in range(10):
                        fn()
                got = {n: [] for n in steps}
                order = list(steps) + list(steps)[::-1]
                for _ in range(4):
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
