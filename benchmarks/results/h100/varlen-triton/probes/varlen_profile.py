"""Where a variable-length step's time goes: one case, three ways, through the engine's own step.

    python benchmarks/results/h100/varlen-triton/probes/varlen_profile.py [--device cuda] [--dtype bf16] [--budget S] [--packed]

For LSTM at batch 64, seq 200, hidden 512 (the ``varlen`` suite's shape), train and forward, with
the lanes ``triton`` and ``torch-nn``: the batch full length (no lengths), with every length 200
(``200:200``: the variable-length path alone; our kernels run without lengths), and with lengths
10:200 (the suite's). Each lane meets a variable-length batch its own way (``Lane.lengths``), and
``--packed`` adds ``triton`` given the batch packed too (``triton/packed``). Each step is
verified by the engine's runner elsewhere; here each is timed by the engine's own clock
(``rnnbench.timing.measure``: the first call apart, two warm-ups, synchronised runs for a
``--budget`` of seconds, 0.5 by default, the median) and profiled over 3 calls, and the top device
kernels by total time are printed. (The run kept as ``profile-bf16-9bfb339.txt`` came from this
probe's first version, which had no ``--packed`` and timed 20 synchronised calls after 5 warm-ups
with a clock of its own.)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "src"))

import torch  # noqa: E402

from rnnbench.cases import Case  # noqa: E402
from rnnbench.lanes import LANES  # noqa: E402
from rnnbench.lanes.triton import make_lane  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import measure  # noqa: E402
from rnnbench.workload import TorchStep, lane_step, make_inputs, module_call  # noqa: E402


def main() -> int:
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    dtype = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "bf16"
    small = device == "cpu"
    budget = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 0.5
    lanes = {"triton": LANES.get("triton") or make_lane(), "torch-nn": LANES["torch-nn"]}
    if "--packed" in sys.argv:
        lanes["triton/packed"] = lanes["triton"]
    shape = dict(batch_size=4, seq_len=6, input_size=8, hidden_size=16) if small else dict(
        batch_size=64, seq_len=200, input_size=512, hidden_size=512)
    top = shape["seq_len"]
    summary = []
    for mode in ("train", "forward"):
        for lengths in (None, f"{top}:{top}", f"10:{top}" if not small else f"1:{top}"):
            case = Case(cell="lstm", mode=mode, dtype=dtype, device=device, lengths=lengths, **shape)
            inputs = make_inputs(case)
            for name, lane in lanes.items():
                with matmul_mode(dtype):
                    if name.endswith("/packed"):
                        module = lane.module_for(case, inputs.weights)
                        step = TorchStep(*module_call(module, case, inputs, lengths_mode="packed"), device)
                    else:
                        step = lane_step(lane, case, inputs)
                    fn = step.fn
                    ms = measure(fn, device, budget_s=budget, min_runs=3 if small else 20).median_ms
                    activities = [torch.profiler.ProfilerActivity.CPU]
                    if device == "cuda":
                        activities.append(torch.profiler.ProfilerActivity.CUDA)
                    with torch.profiler.profile(activities=activities) as prof:
                        for _ in range(3):
                            fn()
                        if device == "cuda":
                            torch.cuda.synchronize()
                label = f"{mode:7s} lengths={lengths or 'none':8s} {name:13s}"
                summary.append(f"{label} {ms:8.3f} ms")
                print(f"\n=== {label}: {ms:.3f} ms per call (median of synchronised calls)")
                key = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
                print(prof.key_averages().table(sort_by=key, row_limit=12, max_name_column_width=60))
                step.close()
    print("\n" + "\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
