"""Strict fp32's large products (a layer's input and weight gradients, its input projection) as
three fp16 products from operands split once (3xFP16), against the 3xTF32 split products they run
as now (``ops/split_products.py``) and cuBLAS' IEEE ``torch.mm``: a probe for the next step.

    PYTHONPATH=src python3 benchmarks/results/h100/x3-anatomy/probes/fp16_products.py OUT.jsonl

Each operand ``[rows, K]`` (the reduction contiguous, as ``split_products`` lays them out) is divided
row by row by the power of two that brings its largest ``|x|`` into ``[2^14, 2^15)``, then split into
an fp16 high part and a remainder at the same scale (not times 2^11: all three products then share
one scale and one accumulator a chunk, summed in the tensor core for that chunk only and added to
the running sum on the FMA units, as the 3xTF32 split product does; a remainder keeps its 11 bits
for values down to 2^-17 of the row's largest). The split here is torch's (timed apart); the
product multiplies each row and column of the result by its scales. Device µs a call from CUDA
graphs of 20 calls; each form checked against float64 first (largest relative error)."""

import json
import sys

import torch
import triton
import triton.language as tl

from rnnbench.ops import split_products as sp
from rnnbench.precision import matmul_mode
from rnnbench.timing import measure
from rnnbench.verify import relative_error
from rnnbench.workload import graphed

CALLS = 20
CASES = [("lstm B128 H1024", 3840, 4096, 1024), ("gru B128 H1024", 3840, 3072, 1024),
         ("lstm B32 H1024", 960, 4096, 1024), ("lstm B128 H512", 3840, 2048, 512)]


@triton.jit
def fp16x3_kernel(a_hi_ptr, a_lo_ptr, b_hi_ptr, b_lo_ptr, a_inv_ptr, b_inv_ptr, c_ptr, M, N, K,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """``C = A @ B^T`` (``A [M, K]``, ``B [N, K]`` as fp16 parts under row scales), whole tiles."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    m = (first_m + (pid % in_group) % rows) * BM + tl.arange(0, BM)
    n = ((pid % in_group) // rows) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a_off = m[:, None] * K + k[None, :]
        b_off = n[None, :] * K + k[:, None]
        a_h = tl.load(a_hi_ptr + a_off)
        a_l = tl.load(a_lo_ptr + a_off)
        b_h = tl.load(b_hi_ptr + b_off)
        b_l = tl.load(b_lo_ptr + b_off)
        chunk = tl.dot(a_l, b_h)
        chunk = tl.dot(a_h, b_l, chunk)
        chunk = tl.dot(a_h, b_h, chunk)
        acc += chunk
    acc = acc * tl.load(a_inv_ptr + m)[:, None] * tl.load(b_inv_ptr + n)[None, :]
    tl.store(c_ptr + m[:, None] * N + n[None, :], acc)


def split16(x):
    """``(hi, lo, inv)``: fp16 parts of ``x [rows, K]`` under each row's power of two, and its inverse."""
    m = x.abs().amax(dim=1).clamp_min(2.0 ** -100)
    scale = torch.exp2(14 - torch.floor(torch.log2(m)))
    xs = x * scale[:, None]
    hi = xs.half()
    return hi, (xs - hi.float()).half(), (1.0 / scale).float().contiguous()


def product16(a, b, tiles=(128, 128, 64, 8, 3)):
    (a_hi, a_lo, a_inv), (b_hi, b_lo, b_inv) = a, b
    M, K = a_hi.shape
    N = b_hi.shape[0]
    out = torch.empty(M, N, device=a_hi.device, dtype=torch.float32)
    bm, bn, bk, warps, stages = tiles
    fp16x3_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](a_hi, a_lo, b_hi, b_lo, a_inv, b_inv, out, M, N, K,
                                                             BM=bm, BN=bn, BK=bk, GROUP_M=8, num_warps=warps,
                                                             num_stages=stages)
    return out


def device_us(fn):
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, "cuda", budget_s=0.3).median_ms * 1e3 / CALLS


def main(out):
    rows = []
    gen = torch.Generator().manual_seed(0)
    with matmul_mode("fp32"):
        for name, R, GH, I in CASES:
            d_gx, x = (torch.randn(R, c, generator=gen).cuda() / c ** 0.5 for c in (GH, I))
            w_ih = torch.randn(GH, I, generator=gen).cuda() / I ** 0.5
            # dW_ih = d_gx^T x: both reduced over the R rows (K-major parts of the transposes); the
            # projection x W_ih^T: reduced over I
            products = {"dW": (d_gx.t().contiguous(), x.t().contiguous()), "proj": (x, w_ih)}
            for what, (A, B) in products.items():
                want = A.double() @ B.double().t()
                a32, b32 = sp.split(A), sp.split(B)
                a16, b16 = split16(A), split16(B)
                forms = {"cublas": lambda: torch.mm(A, B.t()), "3xtf32": lambda: sp.product(a32, b32)}
                if A.shape[0] % 128 == 0 and B.shape[0] % 128 == 0 and A.shape[1] % 64 == 0:  # (whole tiles only)
                    forms.update({"3xfp16": lambda: product16(a16, b16),
                                  "3xfp16 k32 s4": lambda: product16(a16, b16, (128, 128, 32, 8, 4))})
                row = {"case": name, "product": what, "M": A.shape[0], "N": B.shape[0], "K": A.shape[1]}
                for form, fn in forms.items():
                    try:
                        row[f"error {form}"] = relative_error(fn(), want)
                        row[f"us {form}"] = device_us(fn)
                    except Exception as e:  # noted, the rest go on
                        row[f"failed {form}"] = f"{type(e).__name__}: {str(e)[:200]}"
                row["us torch split16 of both"] = device_us(lambda: (split16(A), split16(B)))
                row["us split32 of both"] = device_us(lambda: (sp.split(A), sp.split(B)))
                rows.append(row)
                print(f"{name} {what} [{row['M']}x{row['N']}x{row['K']}]: " + " ".join(
                    f"{f}={row[f'us {f}']:.1f} ({row[f'error {f}']:.1e})" if f"us {f}" in row
                    else f"{f}=FAILED {row.get(f'failed {f}')}" for f in forms), flush=True)
    with open(out, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
