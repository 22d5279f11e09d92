"""Host time against call time of the engine's eager steps with strict fp32's split products taken
(``triton-split``: both limits 0 for these sizes) and not (``triton-unsplit``: both infinite), in
one process: whether the eager steps that the splits slowed (``paths.py``) are bound by the host.
From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h100/fp16-products/probes/host.py OUT.jsonl

Per case, medians over 8 rounds (forms A B B A) of ``call`` (the engine's timing: events around
each call, synchronised after) and ``host`` (calls issued back to back, synchronised once: host
µs a call while the device runs behind), µs a call (``call-floor/probes/call_floor``)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, timed, write_rows  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes.registry import get_lane  # noqa: E402
from rnnbench.ops import gradients, projection  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.workload import make_inputs, module_call  # noqa: E402

CASES = [("lstm", 32, 1024, "forward"), ("lstm", 128, 512, "forward"), ("lstm", 128, 512, "train"),
         ("lstm", 128, 1024, "forward"), ("lstm", 128, 1024, "train")]
LIMITS = {"triton-split": (0.0, {"captured": 0.0, "eager": 0.0}, 0),
          "triton-unsplit": (float("inf"), {"captured": float("inf"), "eager": float("inf")}, 0)}


def limits(form):
    gradients.SPLIT_MIN_FLOP, projection.SPLIT_MIN_FLOP, gradients.SPLIT_MIN_WEIGHT_TILES = LIMITS[form]


def main(out):
    rows = []
    for cell, batch, hidden, mode in CASES:
        case = Case(cell=cell, batch_size=batch, input_size=hidden, hidden_size=hidden, loss="all_steps", seq_len=30,
                    dtype="fp32", mode=mode, device="cuda")
        inputs = make_inputs(case)
        with matmul_mode(case.dtype):
            steps = {form: module_call(get_lane("triton").module_for(case, inputs.weights), case, inputs)[0]
                     for form in LIMITS}
            calls = 100 if mode == "forward" else 40
            for n, fn in steps.items():
                limits(n)
                for _ in range(10):
                    fn()
            got = {(n, k): [] for n in steps for k in ("call", "host")}
            order = list(steps) + list(steps)[::-1]
            for _ in range(4):
                for n in order:
                    limits(n)
                    got[n, "call"].append(timed(steps[n], calls))
                    got[n, "host"].append(host_us(steps[n], calls))
            for n in steps:
                row = {"case": case.key, "form": n,
                       **{f"{k}_us": sorted(got[n, k])[len(got[n, k]) // 2] for k in ("call", "host")}}
                rows.append(row)
                print(f"{case.key} {n}: call {row['call_us']:.1f}, host {row['host_us']:.1f} µs", flush=True)
    limits("triton-unsplit")
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
