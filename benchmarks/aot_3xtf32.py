"""Why the 3xTF32 plans are what they are: compile the plans it chose against the ones it rejected.

    python benchmarks/aot_3xtf32.py > OUT.txt      (no GPU needed; seconds with Triton's cache warm)

Each line is one kernel compiled for sm_90 by ``rnnbench.ops.aot`` (registers, spill bytes as
``stack``, shared memory, matrix instructions): the LSTM forward at hidden 100 and 500 with its
weights resident (the split of a resident operand is held in registers) and streamed, and the
backward of the LSTM, GRU and RNN with 128- against 64-wide chunks and, for the RNN, resident;
then, at 64 batch rows a program, the streamed forward and the split-K backward at 4 warps (the
default) against 8; last, the split-once forwards (``Plan.split_once``) in 32-wide chunks (the
default) against 64 (the plan before, which spilled) and 8 warps. Run it under each Triton whose
compile matters (the CI's and the GPU machine's).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from rnnbench.ops.aot import variant_usage  # noqa: E402

# (cell, direction, batch_size, hidden_size, plan fields changed from the default 3xTF32 plan)
VARIANTS = [
    ("lstm", "forward", 20, 100, {}), ("lstm", "forward", 20, 500, {}),
    ("lstm", "forward", 20, 500, {"w_resident": True, "block_k": 128}),
    ("lstm", "backward", 20, 100, {}), ("lstm", "backward", 20, 100, {"block_k": 128}),
    ("lstm", "backward", 128, 1024, {}), ("lstm", "backward", 128, 1024, {"block_k": 128}),
    ("gru", "backward", 32, 512, {}), ("gru", "backward", 32, 512, {"block_k": 128}),
    ("rnn", "backward", 20, 100, {}), ("rnn", "backward", 20, 100, {"w_resident": True, "num_warps": 8}),
    ("rnn", "backward", 20, 500, {}), ("rnn", "backward", 20, 500, {"w_resident": True, "num_warps": 8}),
    # 64 batch rows a program: the forward and the split-K backward at 4 warps (the defaults,
    # plans.FP32_WIDE_FORWARD_WARPS and X3_SPLIT_K_WIDE_WARPS) against the 8 before.
    *[(cell, "forward", batch, hidden, changes) for cell, batch, hidden in (("lstm", 128, 1024), ("gru", 128, 1024),
                                                                             ("lstm", 256, 512))
      for changes in ({}, {"num_warps": 8})],
    *[(cell, "backward", batch, hidden, changes) for cell, batch, hidden in (("lstm", 256, 512), ("gru", 256, 512),
                                                                              ("gru", 128, 768))
      for changes in ({}, {"num_warps": 8})],
    # Split once: 32-wide chunks (plans.SPLIT_ONCE_BLOCK_K; six in flight with the weights' copy
    # at 64 rows) against 64 wide at the stages the plan had then (four, three with the copy), at 4 and 8 warps.
    *[(cell, "forward", batch, hidden, changes)
      for cell, batch, hidden, old_stages in (("lstm", 20, 500, 4), ("rnn", 20, 500, 4), ("gru", 32, 512, 4),
                                              ("lstm", 32, 512, 4), ("lstm", 128, 512, 4), ("lstm", 32, 1024, 4),
                                              ("lstm", 128, 1024, 3), ("gru", 128, 1024, 3), ("lstm", 256, 512, 3))
      for changes in ({}, {"block_k": 64, "num_stages": old_stages},
                      {"block_k": 64, "num_stages": old_stages, "num_warps": 8})],
]


def main() -> int:
    for cell, direction, batch, hidden, changes in VARIANTS:  # planned for an H100 without touching a GPU
        # The exchange plans these were chosen among (the RNN at 100 has been on chip since).
        plan, usage = variant_usage(cell, direction, torch.float32, batch, hidden, "tf32x3", {"h_on_chip": False},
                                    changes)
        label = "default" if not changes else "rejected"
        print(f"{label:8s} {cell} {direction} B{batch} H{hidden} {plan} {usage}", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
