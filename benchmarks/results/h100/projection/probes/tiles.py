"""Probe: the input projection's GPU time, our tile product (ops/projection.py) in several tilings
against F.linear (cuBLAS), replayed from a CUDA graph of 20 calls; at the seed suites' small
shapes. Prints one line per shape and variant: µs per call (median of 7 replays)."""

import sys

import torch
import triton
from torch.nn import functional as F

from rnnbench.ops.projection import input_projection_kernel
from rnnbench.precision import matmul_mode

SHAPES = [(600, 100, 100, "fp32"), (600, 400, 100, "fp32"), (960, 384, 128, "fp32"), (960, 512, 128, "bf16"),
          (600, 2000, 100, "fp32"), (960, 2048, 512, "fp32"), (3840, 512, 128, "fp32"), (960, 1536, 512, "bf16")]
# (BM, BN, BK, warps, stages)
VARIANTS = [(64, 64, 32, 4, 3), (32, 64, 32, 4, 2), (64, 32, 32, 4, 2), (32, 32, 32, 4, 2), (64, 64, 64, 4, 2),
            (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (32, 64, 64, 4, 2)]


def graphed_us(fn, calls=20, reps=7):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / calls)
    return sorted(times)[reps // 2]


def main():
    for rows, gh, i, dtype in SHAPES:
        td = torch.bfloat16 if dtype == "bf16" else torch.float32
        x = torch.randn(rows, i, device="cuda", dtype=td)
        w = torch.randn(gh, i, device="cuda", dtype=td) * i ** -0.5
        out = torch.empty(rows, gh, device="cuda", dtype=td)
        ref = x.double() @ w.double().t()
        with matmul_mode(dtype):
            line = [f"{rows}x{gh}x{i} {dtype}: F.linear {graphed_us(lambda: F.linear(x, w)):.1f}"]
            for prec in (("tf32x3", "ieee") if dtype == "fp32" else ("ieee",)):
                for bm, bn, bk, warps, stages in VARIANTS:
                    grid = (triton.cdiv(rows, bm) * triton.cdiv(gh, bn),)

                    def call():
                        input_projection_kernel[grid](x, w, out, rows, i, gh, PRECISION=prec, UPCAST=False, BM=bm, BN=bn,
                                                      BK=bk, num_warps=warps, num_stages=stages)
                    us = graphed_us(call)
                    err = ((out.double() - ref).norm() / ref.norm()).item()
                    line.append(f"{prec} {bm}x{bn}x{bk}w{warps}s{stages} {us:.1f} ({err:.0e})")
        print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
