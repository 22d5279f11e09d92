"""One accumulator per piece of h in the Gluon LSTM forward's product (``SPLIT_ACC``: three
independent wgmma chains at hidden 768, summed after the one wait) against one accumulator for
every piece (the kernel as it is), kernel alone: output, h_n, c_n against float64 (64 steps), then
µs per step from graph replays at 512 and 1024 steps (``gluon_step_parts._per_step_us``), A B B A.

    PYTHONPATH=src python3 benchmarks/results/h200/split-acc/split_acc.py OUT.jsonl
"""
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks/results/h100/gluon-step/probes"))

from gluon_step_parts import _per_step_us  # noqa: E402
from rnnbench.env import environment  # noqa: E402
from rnnbench.ops.lstm import gluon as wired  # noqa: E402
from rnnbench.ops.recurrence import layer_launch  # noqa: E402
from rnnbench.reference import reference_forward  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402

CASES = [(16, 768, "fp16"), (16, 768, "bf16"), (32, 512, "bf16"), (16, 1024, "bf16"), (32, 1024, "bf16"),
         (128, 512, "bf16")]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def forward(x_proj, w_hh, b_ih, b_hh, launch, split):
    T, B, H = x_proj.shape[0], x_proj.shape[1], w_hh.shape[1]
    plan = launch.forward
    h_buf = torch.empty(T + 1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    h_n = torch.empty(1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    c_n = torch.empty_like(h_n)
    grid = plan.grid(B, H)
    counters = torch.zeros(grid[1], device=x_proj.device, dtype=torch.int32)
    width = wired.piece_width(max(16, 1 << (H - 1).bit_length()))
    wired.lstm_forward_gluon_kernel[grid](x_proj, w_hh, b_ih, b_hh, h_buf, h_n, h_buf, h_n, c_n, h_n, h_n, counters,
                                          counters, T, B, H=H, HAS_BIAS=True, HAS_H0=False, HAS_C0=False, SAVE=False,
                                          AHEAD=False, BLOCK_B=plan.block_b, PIECE=width, PIECES=-(-H // width),
                                          num_warps=4, SPLIT_ACC=split)
    return h_buf, h_n, c_n


def main(out):
    dev = torch.device("cuda")
    with open(out, "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
    for batch, hidden, name in CASES:
        dtype = DTYPES[name]
        gen = torch.Generator().manual_seed(0)
        bound = hidden ** -0.5
        w_ih, w_hh = [((torch.rand(4 * hidden, hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
        b_ih, b_hh = [((torch.rand(4 * hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
        x = torch.randn(1024, batch, hidden, generator=gen).to(dtype)
        x_proj = (x.to(dev) @ w_ih.to(dev).t()).contiguous()
        w, bi, bh = w_hh.to(dev), b_ih.to(dev), b_hh.to(dev)
        launch = layer_launch("lstm", batch, hidden, dtype, dev)
        weights = {"weight_ih_l0": w_ih.double(), "weight_hh_l0": w_hh.double(), "bias_ih_l0": b_ih.double(),
                   "bias_hh_l0": b_hh.double()}
        zeros = torch.zeros(1, batch, hidden, dtype=torch.float64)
        ref_out, (ref_h, ref_c) = reference_forward("lstm", weights, x[:64].double(), (zeros, zeros), 1)
        runs = {k: (lambda T, split=split: forward(x_proj[:T], w, bi, bh, launch, split))
                for k, split in (("one", False), ("split", True))}
        row = {"batch_size": batch, "hidden_size": hidden, "dtype": name, "grid": launch.forward.grid(batch, hidden)}
        for kernel, run in runs.items():
            h_buf, h_n, c_n = run(64)
            row[f"{kernel}_error"] = max(relative_error(h_buf[1:].cpu().double(), ref_out),
                                         relative_error(h_n[0].cpu().double(), ref_h[0]),
                                         relative_error(c_n[0].cpu().double(), ref_c[0]))
        samples = {k: [] for k in runs}
        for kernel in ("one", "split", "split", "one"):
            samples[kernel].append(_per_step_us(runs[kernel], 512)[0])
        for kernel, got in samples.items():
            row[f"{kernel}_us_per_step"] = sum(got) / 2
            row[f"{kernel}_samples"] = got
        row["split_over_one"] = row["split_us_per_step"] / row["one_us_per_step"]
        print(f"B{batch} H{hidden} {name}: one {row['one_us_per_step']:.3f}, split {row['split_us_per_step']:.3f} "
              f"µs/step ({row['split_over_one']:.3f}x); errors {row['one_error']:.2e}, {row['split_error']:.2e}",
              flush=True)
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
