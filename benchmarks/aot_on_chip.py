"""Why the on-chip plans are what they are: the chosen warps against the rejected ones, compiled.

    python benchmarks/aot_on_chip.py > OUT.txt      (no GPU needed; a minute with Triton's cache cold)

Each line is one kernel compiled for sm_90 by ``rnnbench.ops.aot`` (registers, spill bytes as
``stack``, shared memory, matrix instructions) with the on-chip plan (``Plan.h_on_chip``) at batch
128: the default where there is one, else the plan forced; ``rejected`` lines change the warps:
the RNN in 3xTF32 at hidden 128 at 4 warps, the LSTM and GRU at hidden 128 in bf16 (512-row
tiles) at 4 warps, and the LSTM's 3xTF32 backward at hidden 64 (why 3xTF32 goes on chip only for
the RNN).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from rnnbench.ops.aot import variant_usage  # noqa: E402

BF16, FP32 = torch.bfloat16, torch.float32
ON_CHIP = {"h_on_chip": True}
# (label, cell, direction, dtype, hidden, forward precision, plan fields changed after choosing)
VARIANTS = [
    ("default", "rnn", "forward", FP32, 128, "tf32x3", {}), ("default", "rnn", "backward", FP32, 128, "tf32x3", {}),
    ("rejected", "rnn", "forward", FP32, 128, "tf32x3", {"num_warps": 4}),
    ("rejected", "rnn", "backward", FP32, 128, "tf32x3", {"num_warps": 4}),
    ("default", "rnn", "forward", BF16, 128, "ieee", {}), ("default", "rnn", "forward", FP32, 128, "tf32", {}),
    ("forced", "lstm", "forward", BF16, 128, "ieee", {}), ("forced", "lstm", "backward", BF16, 128, "ieee", {}),
    ("rejected", "lstm", "forward", BF16, 128, "ieee", {"num_warps": 4}),
    ("rejected", "lstm", "backward", BF16, 128, "ieee", {"num_warps": 4}),
    ("forced", "gru", "forward", BF16, 128, "ieee", {}), ("forced", "gru", "backward", BF16, 128, "ieee", {}),
    ("rejected", "gru", "forward", BF16, 128, "ieee", {"num_warps": 4}),
    ("rejected", "gru", "backward", BF16, 128, "ieee", {"num_warps": 4}),
    ("forced", "lstm", "forward", FP32, 64, "tf32x3", {}), ("rejected", "lstm", "backward", FP32, 64, "tf32x3", {}),
]


def main() -> int:
    for label, cell, direction, dtype, hidden, precision, changes in VARIANTS:
        plan, usage = variant_usage(cell, direction, dtype, 128, hidden, precision,
                                    {} if label == "default" else ON_CHIP, changes)
        print(f"{label:8s} {cell} {direction} {str(dtype).removeprefix('torch.')} {precision} B128 H{hidden} {plan} "
              f"{usage}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
