"""How long a step's recurrent product takes as one warpgroup's wgmma chain against the reduction
split over two warpgroups (8 warps): each warpgroup half of K, stacked into one M = 128 product
whose two diagonal blocks are the halves (the off-diagonal ones wasted). Gluon, Triton 3.6,
sm_90; the operands resident in shared memory, the product repeated ``reps`` times (each a fresh
accumulator, summed into a running total so none is dropped), µs a product from the difference of
two repetition counts (CUDA events, median of 5). 48 programs, as at FlashRNN's shape.

    PYTHONPATH=src python3 benchmarks/results/h200/wgmma-chains/chains.py OUT.jsonl
"""
import json
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

sys.path.insert(0, "src")
from rnnbench.env import environment  # noqa: E402


@gluon.jit
def chain_kernel(w_ptr, h_ptr, out_ptr, reps, M: gl.constexpr, N: gl.constexpr, PIECE: gl.constexpr,
                 PIECES: gl.constexpr, num_warps: gl.constexpr):
    """W [M, PIECES*PIECE] and h [N, PIECES*PIECE] (16-bit) into shared memory, then ``reps``
    products W h^T [M, N] (fp32), one asynchronous wgmma chain per piece and one wait each."""
    dt: gl.constexpr = w_ptr.dtype.element_ty
    LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, N, 16])
    W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([M, PIECE], dt)
    H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([N, PIECE], dt)
    K: gl.constexpr = PIECES * PIECE
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, LOAD))
    rn = gl.arange(0, N, layout=gl.SliceLayout(1, LOAD))
    kk = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
    w_smem = gl.allocate_shared_memory(dt, [PIECES, M, PIECE], W_SMEM)
    h_smem = gl.allocate_shared_memory(dt, [PIECES, N, PIECE], H_SMEM)
    for i in gl.static_range(PIECES):
        w_smem.index(i).store(gl.load(w_ptr + rm[:, None] * K + i * PIECE + kk[None, :]))
        h_smem.index(i).store(gl.load(h_ptr + rn[:, None] * K + i * PIECE + kk[None, :]))
    fence_async_shared()
    gl.thread_barrier()
    total = gl.zeros([M, N], gl.float32, ACC)
    for _ in range(reps):
        acc = gl.zeros([M, N], gl.float32, ACC)
        for i in gl.static_range(PIECES):
            acc = warpgroup_mma(w_smem.index(i), h_smem.index(i).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        total = total + acc
    om = gl.arange(0, M, layout=gl.SliceLayout(1, ACC))
    on = gl.arange(0, N, layout=gl.SliceLayout(0, ACC))
    gl.store(out_ptr + gl.program_id(0) * M * N + om[:, None] * N + on[None, :], total)


# (name, M, N, K, warps): the current step (one warpgroup, K 768, batch 16), the same at batch 32,
# two warpgroups each half of K at batch 16 (M 128, N 32) and at batch 32 (N 64), and two
# warpgroups at N 16 (how two chains share the tensor cores, whatever the waste).
VARIANTS = [("one_wg_n16", 64, 16, 768, 4), ("one_wg_n32", 64, 32, 768, 4), ("two_wg_n32_halfK", 128, 32, 384, 8),
            ("two_wg_n64_halfK", 128, 64, 384, 8), ("two_wg_n16_halfK", 128, 16, 384, 8),
            ("one_wg_n16_halfK", 64, 16, 384, 4)]


def time_ms(fn):
    samples = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e))
    return sorted(samples)[2]


def main(out):
    rows = [{"record": "env", **environment()}]
    for name, M, N, K, warps in VARIANTS:
        piece = min(256, K // 3) if K == 768 else 128
        pieces = K // piece
        w = torch.randn(M, K, device="cuda").div(K ** 0.5).half()
        h = torch.randn(N, K, device="cuda").half()
        o = torch.empty(48, M, N, device="cuda")
        run = lambda reps: chain_kernel[(48, )](w, h, o, reps, M=M, N=N, PIECE=piece, PIECES=pieces,  # noqa: E731
                                               num_warps=warps)
        run(1)
        torch.cuda.synchronize()
        want = (w.float() @ h.float().t())
        err = ((o[0] - want).norm() / want.norm()).item()
        run(10)
        t1, t2 = time_ms(lambda: run(2000)), time_ms(lambda: run(4000))
        us = (t2 - t1) * 1000 / 2000
        row = {"variant": name, "M": M, "N": N, "K": K, "num_warps": warps, "piece": piece,
               "wgmma_per_warpgroup": K // 16, "us_per_product": us, "error_first": err}
        rows.append(row)
        print(f"{name:20s} M{M} N{N} K{K} warps {warps}: {us:.3f} µs a product (error {err:.1e})", flush=True)
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main(*sys.argv[1:])
