"""A probe: the forward step's recurrent product at FlashRNN's shape (64 gate rows x 16 batch rows, K = 768 in
pieces of 256), the weights read by wgmma from shared memory (SS) or held in registers (RS) for the first
REG_PIECES pieces; h stale in shared memory, no exchange, no cell: the product alone, 48 programs.

    PYTHONPATH=src python3 benchmarks/results/h100/rs-wgmma/probes/rs_product.py OUT.jsonl   # on a GPU
    PYTHONPATH=src python3 benchmarks/results/h100/rs-wgmma/probes/rs_product.py --compile  # sm_90 registers, no GPU

Why: one warpgroup's 48 wgmma of 64 x 16 x 16 took about 21 cycles each, two warpgroups no less
(docs/kernels.md, "The LSTM forward in Gluon"): 2.5 KB of operands an instruction from shared memory
at 128 bytes a cycle is 20 cycles; with the weights in registers only h's 512 bytes are read there."""
import json
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon._runtime import GluonASTSource
from rnnbench.ops import aot

@gluon.jit
def product_probe(w_ptr, h_ptr, out_ptr, STEPS, H: gl.constexpr, BLOCK_B: gl.constexpr, PIECE: gl.constexpr,
                  PIECES: gl.constexpr, REG_PIECES: gl.constexpr, num_warps: gl.constexpr):
    dt: gl.constexpr = w_ptr.dtype.element_ty
    LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([64, PIECE], dt)
    H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_B, PIECE], dt)
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_B, 16])
    A: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ACC, k_width=2)
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, LOAD))
    kw = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
    hb = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(1, LOAD))
    base = gl.program_id(0) * 64 * H
    w_smem = gl.allocate_shared_memory(dt, [PIECES, 64, PIECE], W_SMEM)
    h_smem = ()
    for i in gl.static_range(PIECES):
        k = i * PIECE + kw
        w_smem.index(i).store(gl.load(w_ptr + base + rows[:, None] * H + k[None, :]))
        hs = gl.allocate_shared_memory(dt, [BLOCK_B, PIECE], H_SMEM)
        hs.store(gl.load(h_ptr + hb[:, None] * H + k[None, :]))
        h_smem = h_smem + (hs,)
    fence_async_shared()
    gl.thread_barrier()
    w_regs = ()
    for i in gl.static_range(REG_PIECES):
        w_regs = w_regs + (w_smem.index(i).load(A),)
    total = gl.zeros([64, BLOCK_B], gl.float32, ACC)
    t = 0
    while t < STEPS:
        acc = gl.zeros([64, BLOCK_B], gl.float32, ACC)
        for i in gl.static_range(PIECES):
            if i < REG_PIECES:
                acc = warpgroup_mma(w_regs[i], h_smem[i].permute((1, 0)), acc, is_async=True)
            else:
                acc = warpgroup_mma(w_smem.index(i), h_smem[i].permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        total = total + acc
        gl.thread_barrier()
        t += 1
    OUT: gl.constexpr = gl.BlockedLayout([1, 1], [2, 16], [num_warps, 1], [1, 0])
    o = gl.convert_layout(total, OUT)
    r = gl.arange(0, 64, layout=gl.SliceLayout(1, OUT))
    c = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(0, OUT))
    gl.store(out_ptr + gl.program_id(0) * 64 * BLOCK_B + r[:, None] * BLOCK_B + c[None, :], o)

def compile_only():
    for H, pieces, reg in [(768, 3, 0), (768, 3, 1), (768, 3, 2), (768, 3, 3)]:
        k = aot._compile(product_probe, dict(H=H, BLOCK_B=16, PIECE=256, PIECES=pieces, REG_PIECES=reg, num_warps=4),
                         {}, "*fp16", 4, 1, 90, GluonASTSource)
        print(H, reg, aot.resource_usage(k))


def per_step_us(H, B, pieces, reg, programs=48, steps=2000):
    dev = "cuda"
    w = (torch.randn(programs * 64, H, device=dev) * H ** -0.5).half()
    h = torch.randn(B, H, device=dev).half()
    out = torch.empty(programs, 64, B, device=dev, dtype=torch.float32)
    def run(n):
        product_probe[(programs,)](w, h, out, n, H=H, BLOCK_B=B, PIECE=256, PIECES=pieces, REG_PIECES=reg, num_warps=4)
    run(4)
    torch.cuda.synchronize()
    ref = (w.float().view(programs, 64, H) @ h.float().t())  # [P, 64, B]
    err = ((out / 4 - ref).abs().max() / ref.abs().max()).item()
    times = {}
    for n in (steps, 2 * steps):
        run(n)
        samples = []
        for _ in range(7):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); run(n); e.record(); e.synchronize()
            samples.append(s.elapsed_time(e))
        times[n] = sorted(samples)[3]
    return (times[2 * steps] - times[steps]) * 1000 / steps, err


def bench(out_path):
    rows = []
    for H, B, pieces, regs in [(768, 16, 3, (0, 1, 3)), (512, 16, 2, (0, 1, 2)), (512, 32, 2, (0, 1, 2)),
                               (256, 16, 1, (0, 1)), (1024, 16, 4, (0, 1, 2))]:
        res = {r: [] for r in regs}
        for order in (regs, regs[::-1]):
            for r in order:
                res[r].append(per_step_us(H, B, pieces, r))
        for r in regs:
            us = sum(x[0] for x in res[r]) / 2
            row = dict(H=H, B=B, pieces=pieces, reg_pieces=r, us_per_step=us, err=res[r][0][1])
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(out_path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        compile_only()
    else:
        bench(sys.argv[1])
