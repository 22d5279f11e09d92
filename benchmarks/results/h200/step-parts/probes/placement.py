"""Does where a layer's tensors lie in memory move our sliced forward's step? (one GPU, one process)

    PYTHONPATH=src python3 benchmarks/results/h200/step-parts/probes/placement.py OUT_DIR

Why: the same forward kernel at batch 512, hidden 4096 in bf16 took 156.2 and 180.2 µs a step in two
processes of one run (``../fence-be1b86c``), and two stand-in steps with the same product loop (the
same SASS) 56.0 and 70.6 (``../be1b86c``). Within one process a replayed graph reads the same
addresses every time, so a difference of placement would show between processes, not within one.
Here, in one process, the kernel alone (no save, the default plan; ``triton_dev._kernel_alone``) is
timed on copies of the same ``W_hh`` and ``x_proj`` made after a spacer allocation of ``k`` x 37 MiB
(k = 0 .. PLACEMENTS - 1), each copy its own placement, in two rounds (the placements' order
reversed in the second): µs a step from 30 and 60 steps replayed from a CUDA graph, and each copy's
``W_hh`` address. Writes ``OUT_DIR/placement.jsonl`` (an environment record first; ``ab.run_cases``,
since after its run) and prints each row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

CASES = [("lstm", 512, 4096), ("lstm", 1024, 2048)]
PLACEMENTS = 6
SEQ_LEN = 30


def step_us(cell, b, h, w_hh, bias, x_proj) -> float:
    from triton_dev import _kernel_alone, us_per_step

    return us_per_step(lambda n: _kernel_alone(cell, b, n, h, torch.bfloat16, "ieee", x_proj, w_hh, bias, bias),
                       SEQ_LEN)


def measure(case) -> dict:
    """One case's row: every copy's address and its µs a step in both rounds."""
    from triton_dev import kernel_tensors

    cell, b, h = case
    w_hh, bias, x32 = kernel_tensors(cell, b, h, torch.bfloat16, 2 * SEQ_LEN)
    x_proj = x32.to(torch.bfloat16)
    del x32
    copies, spacers = [], []
    for k in range(PLACEMENTS):  # each copy after k spacers of 37 MiB more
        spacers.append(torch.empty(k * 37 << 20, dtype=torch.uint8, device="cuda"))
        copies.append((w_hh.clone(), x_proj.clone()))
    row = {"cell": cell, "batch_size": b, "hidden_size": h, "seq_len": SEQ_LEN,
           "w_hh_address": [w.data_ptr() for w, _ in copies], "us": [[], []]}
    for r, order in enumerate((range(PLACEMENTS), reversed(range(PLACEMENTS)))):
        times = {k: step_us(cell, b, h, copies[k][0], bias, copies[k][1]) for k in order}
        row["us"][r] = [times[k] for k in range(PLACEMENTS)]
    del copies, spacers
    torch.cuda.empty_cache()
    return row


def main(argv: list[str]) -> int:
    from ab import OneLineParser, check_device, run_cases

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    check_device(p, "cuda")
    run_cases(args.out_dir / "placement.jsonl", CASES, ("cell", "batch_size", "hidden_size"), measure, float("inf"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
