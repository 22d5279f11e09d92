"""Where a replayed bidirectional forward's time goes (GRU, batch 32, hidden 128, 30 steps, TF32,
under no_grad), beside the same module as two layers in one direction: torch.profiler's kernels and
host operations over 20 replayed calls, after 20 warm ones, and each call's time (events, median
of 200). From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h200/stacks/probes/bidirectional_profile.py OUT_DIR

(OUT_DIR/profile.txt: what it prints; c164 ran it before it took OUT_DIR, printing only.)
"""
import contextlib
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from rnnbench import nn as rnn  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import time_call  # noqa: E402


def timed(fn, calls=200):
    """Median µs of a call, timed as the engine times one (c164 ran a copy of that timer)."""
    return 1e3 * statistics.median(time_call(fn, "cuda")[1] for _ in range(calls))


def profiles() -> None:
    with matmul_mode("tf32"), torch.no_grad():
        for num_layers, bidirectional in ((1, True), (2, False), (1, False)):
            torch.manual_seed(0)
            module = rnn.GRU(128, 128, num_layers=num_layers, bidirectional=bidirectional, backend="triton").cuda()
            x = torch.randn(30, 32, 128, device="cuda")
            h0 = torch.randn(num_layers * (2 if bidirectional else 1), 32, 128, device="cuda")
            for _ in range(20):
                module(x, h0)
            print(f"=== GRU layers {num_layers} bidirectional {bidirectional}: {timed(lambda: module(x, h0)):.1f} µs a call")
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(20):
                    module(x, h0)
                torch.cuda.synchronize()
            print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=60))
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=60))


def main(argv: list[str]) -> int:
    from ab import OneLineParser, check_device

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    args = p.parse_args(argv)
    check_device(p, "cuda")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with open(args.out_dir / "profile.txt", "w") as f, contextlib.redirect_stdout(f):
        profiles()
    print((args.out_dir / "profile.txt").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
