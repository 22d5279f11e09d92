"""Why the 3xTF32 plans are what they are: compile the plans it chose against the ones it rejected.

    python benchmarks/aot_3xtf32.py > OUT.txt      (no GPU needed; seconds with Triton's cache warm)

Each line is one kernel compiled for sm_90 by ``rnnbench.ops.aot`` (registers, spill bytes as
``stack``, shared memory, matrix instructions): the LSTM forward at hidden 100 and 500 with its
weights resident (the split of a resident operand is held in registers) and streamed, and the
backward of the LSTM, GRU and RNN with 128- against 64-wide chunks and, for the RNN, resident.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from rnnbench.ops.aot import GATES, compile_kernel, resource_usage  # noqa: E402
from rnnbench.ops.common import choose_plan  # noqa: E402

# (cell, direction, batch_size, hidden_size, plan fields changed from the default 3xTF32 plan)
VARIANTS = [
    ("lstm", "forward", 20, 100, {}), ("lstm", "forward", 20, 500, {}),
    ("lstm", "forward", 20, 500, {"w_resident": True, "block_k": 128}),
    ("lstm", "backward", 20, 100, {}), ("lstm", "backward", 20, 100, {"block_k": 128}),
    ("lstm", "backward", 128, 1024, {}), ("lstm", "backward", 128, 1024, {"block_k": 128}),
    ("gru", "backward", 32, 512, {}), ("gru", "backward", 32, 512, {"block_k": 128}),
    ("rnn", "backward", 20, 100, {}), ("rnn", "backward", 20, 100, {"w_resident": True, "num_warps": 8}),
    ("rnn", "backward", 20, 500, {}), ("rnn", "backward", 20, 500, {"w_resident": True, "num_warps": 8}),
]


def main() -> int:
    cuda = torch.device("cuda")  # planned for an H100 (132 multiprocessors) without touching a GPU
    for cell, direction, batch, hidden, changes in VARIANTS:
        plan = choose_plan(batch, hidden, GATES[cell], torch.float32, cuda, multiprocessors=132,
                           precision="tf32x3", direction=direction)
        label = "default" if not changes else "rejected"
        plan = dataclasses.replace(plan, **changes)
        usage = resource_usage(compile_kernel(cell, direction, torch.float32, hidden, plan, "tf32x3"))
        print(f"{label:8s} {cell} {direction} B{batch} H{hidden} {plan} {usage}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
