"""Why the split-K backward's partials are as tall as they are: chosen and rejected plans, compiled.

    python benchmarks/aot_split_k.py [--precision ieee|tf32|tf32x3] > OUT.txt
    (no GPU needed; a few minutes with Triton's cache cold; --precision: only those shapes)

Each line is one split-K backward kernel compiled for sm_90 by ``rnnbench.ops.aot`` (registers,
spill bytes as ``stack``, shared memory, matrix instructions, ``wgmma_waits``: the waits for a
wgmma's result in the SASS) with partial matmuls 64, 128 or 256 units high (``block_k``) at 4 or 8
warps: the plans ``benchmarks/on_chip.py --compare split_k_rows`` and ``split_k_warps`` timed.
``default`` marks the split-K plan ``choose_plan`` makes now (split-K asked for where the default
backward is the transpose: TF32 at hidden 1024). Strict fp32's (3xTF32) shapes, whose default is
128 units at 8 warps (``plans.X3_SPLIT_K_ROWS``), are compiled at 64 and 128 units at 4 warps
(the default before, and the warps it spilled at), 128 and 256 at 8: the plans
``on_chip.py --compare split_k_x3`` timed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from ab import OneLineParser  # noqa: E402
from rnnbench.ops.aot import variant_usage  # noqa: E402

BF16, FP32 = torch.bfloat16, torch.float32
# (cell, dtype, batch_size, hidden_size, forward precision): the A/Bs' cases.
SHAPES = [("lstm", BF16, 16, 768, "ieee"), ("lstm", FP32, 20, 500, "tf32"), ("gru", BF16, 32, 512, "ieee"),
          ("gru", FP32, 32, 512, "tf32"), ("lstm", FP32, 128, 128, "tf32"), ("lstm", FP32, 128, 512, "tf32"),
          ("lstm", BF16, 128, 512, "ieee"), ("gru", BF16, 128, 512, "ieee"), ("lstm", BF16, 32, 1024, "ieee"),
          ("gru", BF16, 32, 1024, "ieee"), ("lstm", BF16, 128, 1024, "ieee"), ("lstm", FP32, 32, 1024, "tf32"),
          ("lstm", FP32, 20, 100, "tf32x3"), ("lstm", FP32, 32, 128, "tf32x3"), ("lstm", FP32, 128, 128, "tf32x3"),
          ("gru", FP32, 32, 128, "tf32x3"), ("gru", FP32, 128, 128, "tf32x3"), ("lstm", FP32, 20, 500, "tf32x3"),
          ("gru", FP32, 32, 512, "tf32x3"), ("lstm", FP32, 128, 512, "tf32x3")]
# (partials' height, warps), None: the plan's own.
HEIGHTS = [(64, None), (128, None), (256, None), (128, 8), (256, 8)]
X3_HEIGHTS = [(64, 4), (128, 4), (128, 8), (256, 8)]


def main() -> int:
    parser = OneLineParser(description="Split-K backward plans compiled for sm_90 (no GPU).")
    parser.add_argument("--precision", choices=sorted({shape[-1] for shape in SHAPES}),
                        help="only the shapes of this forward precision")
    args = parser.parse_args()
    for cell, dtype, batch, hidden, precision in SHAPES:  # planned for an H100 without touching a GPU
        if args.precision and precision != args.precision:
            continue
        default, _ = variant_usage(cell, "backward", dtype, batch, hidden, precision, {"split_k": True}, {})
        for block_k, warps in X3_HEIGHTS if precision == "tf32x3" else HEIGHTS:
            fields = {"split_k": True, "backward_block_k": block_k} | ({"backward_num_warps": warps} if warps else {})
            plan, usage = variant_usage(cell, "backward", dtype, batch, hidden, precision, fields, {})
            label = "default" if plan == default else "rejected"
            print(f"{label:8s} {cell} {str(dtype).removeprefix('torch.')} {precision} B{batch} H{hidden} {plan} {usage}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
