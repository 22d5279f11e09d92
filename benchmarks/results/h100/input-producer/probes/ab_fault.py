"""Probe: rerun on_chip.py --compare inputs' cases in one process (CUDA_LAUNCH_BLOCKING=1 set by the
caller), printing the traceback of the first failure.

    PYTHONPATH=src python3 benchmarks/results/h100/input-producer/probes/ab_fault.py 1,2 [BUDGET] [off]

With ``off`` no call computes its projection in the launch (both settings take torch.mm): does the
fault come without the producers?

Ran on the tree of c907e95 (on_chip.py's ``inputs`` comparison, reverted in b5a29be); see ../README.md.
"""
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "benchmarks"))
import on_chip  # noqa: E402

if len(sys.argv) > 3 and sys.argv[3] == "off":
    import contextlib

    from rnnbench.ops import recurrence
    recurrence.INPUT_PRODUCER_MAX_FLOP = -1.0
    on_chip._inputs_in_launch = contextlib.nullcontext

for k in sys.argv[1].split(","):
    case = on_chip.INPUTS_CASES[int(k)]
    try:
        row = on_chip.measure_case(*case, float(sys.argv[2]) if len(sys.argv) > 2 else 0.05, "cuda", "AB")
        print(case[:6], "ok", {key: round(v, 4) for key, v in row.items() if key.startswith("forward_ms")}, flush=True)
    except Exception:
        print(case[:6], "FAILED\n" + traceback.format_exc()[-3000:], flush=True)
        break
