"""A probe: the LSTM forward step at FlashRNN's shape with the weights in registers and the
reduction split across warps on mma.sync, against our Gluon forward (one GPU).

    PYTHONPATH=src python3 benchmarks/results/h100/mma-sync/probes/ksplit_step.py OUT_DIR
    ... --compile-only      # sm_90 compile and resource use, no GPU needed (Triton 3.6)

Why: at batch 16, hidden 768 (fp16) our Gluon forward takes about 2.35 µs a step, cuDNN's
persistent kernel 1.94 (``benchmarks/results/h200/cudnn-anatomy/``). Both split the layer the
same way (48 programs of 16 units); cuDNN's runs 8 warps at 173 registers a thread, room for the
program's 64 x 768 tile of ``W_hh`` in registers, and multiplies with mma.sync. Our step's
largest part is the product (0.79 µs: 48 wgmma of 64 x 16 x 16 reading the tile from shared
memory, about 29 cycles each at N = 16). Here:

- the tile lives in registers for every step, as mma.sync's A operand: warp s of ``S`` holds
  columns ``s * KS .. s * KS + KS`` of every 256-column piece (``KS = 256 / S``), and ``8 / S``
  warps split the 64 rows; so each warp multiplies its own slice of K (``mma_v2`` on a batched
  ``[S, rows, KS]`` tile whose batch dimension runs across warps);
- h_{t-1} is loaded from L2 straight into the B operand's registers, each warp only its slice
  (no shared memory, no CTA barrier before the product);
- the ``S`` partial products go through shared memory once, and each thread sums the partials of
  its own (unit, batch row) for each gate: the cell's tile, 16 x 16 over 256 threads.

Everything else is the Gluon forward's (``ops/lstm/gluon.py``): the atomic-counter grid barrier,
h_t through ``h_buf [T+1, B, H]``, fp32 cell state, MUFU activations. Forward only, no saved
values, h0 = c0 = 0, batch up to 16, hidden a multiple of 256: a probe of the step, not a kernel
of the package. Variants (``VARIANTS``): ``VEC`` loads h 16 bytes a thread, K permuted so that a
thread's operand registers are contiguous columns (see the kernel); ``SWZ`` swizzles the partials'
buffer; ``POLL`` drops the barrier and polls h for a sentinel per thread (``POLL=2``: the first
piece waited for, the others then loaded again together); ``S=4`` splits K four ways and the rows
two; ``MMA=False`` / ``LOAD_H=False`` / ``CELL_ON=False`` switch parts off (outputs then
meaningless). Results and findings: ``../README.md``.

Measured, each against float64 first (output and c_n, ``verify.relative_error``), then µs per
step (graph replays at T and 2T steps, the difference over T) beside our Gluon forward through
``recurrence_forward`` (default plan) and cuDNN's ``torch.nn.LSTM`` (its whole call, graphed),
in the order A B ... B A. Writes ``OUT_DIR/ksplit_step.jsonl`` (an environment record first) and
prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))

PIECE = gl.constexpr(256)  # columns of W_hh a piece: each warp's slice of K is KS columns of every piece


@gluon.jit
def _tanh(x):
    return gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def _sigmoid(x):
    return 0.5 * _tanh(0.5 * x) + 0.5


_SPIN_WORD = """
        and.b32 a, {w}, 0xFFFF; setp.eq.or.u32 p, a, 0xFFFF, p;
        shr.u32 a, {w}, 16; setp.eq.or.u32 p, a, 0xFFFF, p;"""
_CHECK = gl.constexpr("""{
        .reg .pred p;
        .reg .b32 a;
        mov.b32 $0, $4; mov.b32 $1, $5; mov.b32 $2, $6; mov.b32 $3, $7;
        CHECK:
        setp.ne.u32 p, 0, 0;""" + "".join(_SPIN_WORD.format(w=f"${i}") for i in range(4)) + """
        @!p bra DONE;
        ld.relaxed.gpu.global.v4.b32 {$0, $1, $2, $3}, [$8];
        bra CHECK;
        DONE:
        }""")


@gluon.jit
def _until_written(x, ptr):
    """``x`` (16-bit, as int16), loaded from ``ptr``, with every pack of 8 contiguous values read
    from L2 again (16 bytes at the pack's first pointer) until none is the sentinel 0xFFFF (a NaN
    no arithmetic returns: the slot is not written yet). Each value is written once, by one 16-bit
    store, so a value read is the value written. The first loads are plain, every piece's issued
    at once; only a pack that found a sentinel waits here."""
    return gl.inline_asm_elementwise(_CHECK, "=r,=r,=r,=r,r,r,r,r,l,l,l,l,l,l,l,l", [x, ptr], dtype=gl.int16,
                                     is_pure=False, pack=8)


@gluon.jit(do_not_specialize=["T", "B"])
def ksplit_step_kernel(x_proj_ptr, w_ptr, bias_ptr, h_buf_ptr, c_n_ptr, counter_ptr, T, B,
                       H: gl.constexpr, PIECES: gl.constexpr, S: gl.constexpr, CELL_ON: gl.constexpr,
                       LOAD_H: gl.constexpr, MMA: gl.constexpr, SWZ: gl.constexpr, VEC: gl.constexpr,
                       POLL: gl.constexpr, num_warps: gl.constexpr):
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` zeros) gets the LSTM's h_1..h_T from ``x_proj [T, B, 4H]``
    (x W_ih^T, no bias), ``w [4H, H]`` (W_hh) and ``bias [4H]`` (fp32, b_ih + b_hh); ``c_n [B, H]``
    fp32. One program per 16 units, 8 warps; every program resident (grid barrier)."""
    dt: gl.constexpr = w_ptr.dtype.element_ty
    BH: gl.constexpr = 16
    BB: gl.constexpr = 16
    ROWS: gl.constexpr = 4 * BH
    KS: gl.constexpr = PIECE // S
    WM: gl.constexpr = num_warps // S  # warps splitting the rows
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[S, WM, 1], instr_shape=[1, 16, 8])
    A_OP: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ACC, k_width=2)
    B_OP: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=ACC, k_width=2)
    # The partials' read-back: each thread all S partials of one (unit, batch row); lanes along
    # the batch rows (consecutive words in the [S, 64, 16] buffer: no bank conflicts).
    RED: gl.constexpr = gl.BlockedLayout([S, 1, 1], [1, 2, 16], [1, num_warps, 1], [2, 1, 0])
    CELL: gl.constexpr = gl.SliceLayout(0, RED)
    # SWZ: the partials' rows swizzled (unswizzled, the accumulator's 64-bit stores put rows 0, 2,
    # 4, 6 of a tile on the same banks: 4-way conflicts).
    R_SMEM: gl.constexpr = gl.SwizzledSharedLayout(2, 1, 8, [2, 1, 0]) if SWZ else gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0])
    pid = gl.program_id(0)

    # The tile in registers: piece p, warp slice s, row m (gate m // 16, unit pid * 16 + m % 16).
    sa = gl.arange(0, S, layout=gl.SliceLayout(1, gl.SliceLayout(2, A_OP)))[:, None, None]
    ma = gl.arange(0, ROWS, layout=gl.SliceLayout(0, gl.SliceLayout(2, A_OP)))[None, :, None]
    ka = gl.arange(0, KS, layout=gl.SliceLayout(0, gl.SliceLayout(1, A_OP)))[None, None, :]
    w_rows = (ma // BH) * H + pid * BH + ma % BH
    if VEC:  # K permuted (below): logical k of the product is column c(k) of the slice
        ka = (ka & 1) | (((ka >> 3) & 1) << 1) | (((ka >> 4) & 1) << 2) | (((ka >> 1) & 1) << 3) | (((ka >> 2) & 1) << 4)
    w_regs = ()
    for p in gl.static_range(PIECES):
        w_regs = w_regs + (gl.load(w_ptr + w_rows * H + p * PIECE + sa * KS + ka), )
    # VEC (S = 8, KS = 32 only): h loaded 16 bytes a thread. The B operand's registers hold k bits
    # (0, 3, 4) and its lanes k bits (1, 2); so a thread's 8 registers of k are 8 contiguous
    # columns if logical k is column c(k) = k0 | k3 << 1 | k4 << 2 | k1 << 3 | k2 << 4, and the
    # weights are loaded with the same permutation (K is summed over: any order of it is the
    # same product). X [S, c, n] is loaded in H_PHYS; the relabelling c -> k is a reshape, a
    # permute and a reshape, register renaming only, into B_OP.
    H_PHYS: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 0, 8]],
        lane_bases=[[0, 8, 0], [0, 16, 0], [0, 0, 1], [0, 0, 2], [0, 0, 4]],
        warp_bases=[[1, 0, 0], [2, 0, 0], [4, 0, 0]], block_bases=[], shape=[8, 32, 16])
    if VEC:
        sx = gl.arange(0, S, layout=gl.SliceLayout(1, gl.SliceLayout(2, H_PHYS)))[:, None, None]
        cx = gl.arange(0, KS, layout=gl.SliceLayout(0, gl.SliceLayout(2, H_PHYS)))[None, :, None]
        nx = gl.arange(0, 16, layout=gl.SliceLayout(0, gl.SliceLayout(1, H_PHYS)))[None, None, :]
        x_off = nx * H + sx * KS + cx
        x_mask = nx < B
    # h_{t-1}'s slice for warp s: [S, KS, BB], element (s, k, n) at n * H + p * PIECE + s * KS + k.
    sb = gl.arange(0, S, layout=gl.SliceLayout(1, gl.SliceLayout(2, B_OP)))[:, None, None]
    kb = gl.arange(0, KS, layout=gl.SliceLayout(0, gl.SliceLayout(2, B_OP)))[None, :, None]
    nb = gl.arange(0, BB, layout=gl.SliceLayout(0, gl.SliceLayout(1, B_OP)))[None, None, :]
    h_off = nb * H + sb * KS + kb
    h_mask = nb < B
    red = gl.allocate_shared_memory(gl.float32, [2 if POLL else 1, S, ROWS, BB], R_SMEM)

    u = gl.arange(0, BH, layout=gl.SliceLayout(1, CELL))
    b = gl.arange(0, BB, layout=gl.SliceLayout(0, CELL))
    mask = (b < B)[None, :] & (u < BH)[:, None]
    hid = b[None, :] * H + pid * BH + u[:, None]
    xid = b[None, :] * (4 * H) + pid * BH + u[:, None]
    plane_h = B * H
    plane_x = B * 4 * H
    bias_i = gl.load(bias_ptr + pid * BH + u)[:, None]
    bias_f = gl.load(bias_ptr + H + pid * BH + u)[:, None]
    bias_g = gl.load(bias_ptr + 2 * H + pid * BH + u)[:, None]
    bias_o = gl.load(bias_ptr + 3 * H + pid * BH + u)[:, None]
    c = gl.zeros([BH, BB], gl.float32, CELL)
    x_i = gl.load(x_proj_ptr + xid, mask=mask, other=0.0)
    x_f = gl.load(x_proj_ptr + H + xid, mask=mask, other=0.0)
    x_g = gl.load(x_proj_ptr + 2 * H + xid, mask=mask, other=0.0)
    x_o = gl.load(x_proj_ptr + 3 * H + xid, mask=mask, other=0.0)
    programs = gl.num_programs(0)
    stale = ()  # without LOAD_H: h_0 loaded once, the product of stale h every step
    for p in gl.static_range(PIECES):
        stale = stale + (gl.load(h_buf_ptr + h_off + p * PIECE, mask=h_mask, other=0.0), )
    carried = gl.zeros([S, ROWS, BB], gl.float32, ACC)
    t = 0
    while t < T:
        if LOAD_H:  # every piece's loads issued before the first product (.cg: through L2)
            acc = gl.zeros([S, ROWS, BB], gl.float32, ACC)
            src = h_buf_ptr + t * plane_h + h_off
            hs = ()
            if VEC:
                src = h_buf_ptr + t * plane_h + x_off
                xs = ()
                for p in gl.static_range(PIECES):  # every piece's loads issued first
                    xs = xs + (gl.load(src + p * PIECE, mask=x_mask, other=0.0, cache_modifier=".cg"), )
                if POLL == 2:  # the first piece waited for, then the others loaded again, together
                    first = _until_written(xs[0].to(gl.int16, bitcast=True), src).to(dt, bitcast=True)
                    rest = (first, )
                    for p in gl.static_range(1, PIECES):
                        rest = rest + (gl.load(src + p * PIECE, mask=x_mask, other=0.0, cache_modifier=".cg"), )
                    xs = rest
                for p in gl.static_range(PIECES):
                    x = xs[p]
                    if POLL:  # (batch 16 only: every row is written)
                        x = _until_written(x.to(gl.int16, bitcast=True), src + p * PIECE).to(dt, bitcast=True)
                    x = gl.reshape(x, [S, 2, 2, 2, 2, 2, BB])  # [s, c4, c3, c2, c1, c0, n]
                    x = gl.permute(x, [0, 3, 4, 1, 2, 5, 6])  # [s, k4=c2, k3=c1, k2=c4, k1=c3, k0=c0, n]
                    hs = hs + (gl.convert_layout(gl.reshape(x, [S, KS, BB]), B_OP), )
            else:
                for p in gl.static_range(PIECES):
                    hs = hs + (gl.load(src + p * PIECE, mask=h_mask, other=0.0, cache_modifier=".cg"), )
        else:  # (a step-carried zero, so the product is not hoisted out of the loop)
            acc = carried * 0.0
            hs = stale
        if MMA:
            for p in gl.static_range(PIECES):
                acc = mma_v2(w_regs[p], hs[p], acc)
        else:
            for p in gl.static_range(PIECES):  # every load kept
                acc = acc + gl.sum(gl.sum(gl.sum(hs[p].to(gl.float32), axis=2), axis=1), axis=0) * 0.0
        carried = acc
        # POLL: two buffers by step parity, one CTA barrier a step (a warp storing step t+1's
        # partials has passed step t's barrier, which every warp reached after reading step t-1's).
        part = red.index(t % 2) if POLL else red.index(0)
        part.store(acc)
        gl.thread_barrier()
        gi = gl.sum(part.slice(0, BH, dim=1).load(RED), axis=0) + x_i.to(gl.float32) + bias_i
        gf = gl.sum(part.slice(BH, BH, dim=1).load(RED), axis=0) + x_f.to(gl.float32) + bias_f
        gg = gl.sum(part.slice(2 * BH, BH, dim=1).load(RED), axis=0) + x_g.to(gl.float32) + bias_g
        go = gl.sum(part.slice(3 * BH, BH, dim=1).load(RED), axis=0) + x_o.to(gl.float32) + bias_o
        if CELL_ON:
            c = _sigmoid(gf) * c + _sigmoid(gi) * _tanh(gg)
            h = _sigmoid(go) * _tanh(c)
        else:
            h = gi + gf + gg + go
        gl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(dt), mask=mask)
        if t + 1 < T and not POLL:
            gl.thread_barrier()  # every thread's store (and read of red) before the release
            gl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
        nxt = x_proj_ptr + gl.minimum(t + 1, T - 1) * plane_x  # the next step's input, before the wait
        x_i = gl.load(nxt + xid, mask=mask, other=0.0)
        x_f = gl.load(nxt + H + xid, mask=mask, other=0.0)
        x_g = gl.load(nxt + 2 * H + xid, mask=mask, other=0.0)
        x_o = gl.load(nxt + 3 * H + xid, mask=mask, other=0.0)
        if t + 1 < T and not POLL:
            while gl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < programs * (t + 1):
                pass
            gl.thread_barrier()
        t += 1
    gl.store(c_n_ptr + hid, c, mask=mask)


def ksplit_forward(x_proj: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor, s: int = 8, cell: bool = True,
                   load_h: bool = True, mma: bool = True, swz: bool = False, vec: bool = False,
                   poll: bool = False):
    """``(h_buf [T+1, B, H], c_n [B, H] fp32)`` from :func:`ksplit_step_kernel`."""
    T, B, G = x_proj.shape
    H = G // 4
    if B > 16 or H % PIECE.value:
        raise ValueError(f"the probe takes batch <= 16 and hidden a multiple of {PIECE}")
    h_buf = torch.zeros(T + 1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    if poll:  # every slot a step writes starts as the sentinel (h_buf[0], h0, stays zeros)
        if B != 16 or not vec:  # (poll 2: the first piece waited for, then the rest loaded again)
            raise ValueError("the polled probe takes batch 16 and VEC")
        h_buf[1:].view(torch.int16).fill_(-1)
    c_n = torch.empty(B, H, device=x_proj.device, dtype=torch.float32)
    counter = torch.zeros(1, device=x_proj.device, dtype=torch.int32)
    ksplit_step_kernel[(H // 16, )](x_proj, w_hh, bias, h_buf, c_n, counter, T, B, H=H, PIECES=H // PIECE.value, S=s,
                                    CELL_ON=cell, LOAD_H=load_h, MMA=mma, SWZ=swz, VEC=vec, POLL=poll, num_warps=8)
    return h_buf, c_n


VARIANTS = {  # name: (S, CELL_ON, LOAD_H, MMA, SWZ, VEC, POLL)
    "ksplit8": (8, True, True, True, False, False, False),
    "ksplit8_swz": (8, True, True, True, True, False, False),
    "ksplit8_vec": (8, True, True, True, False, True, False),
    "ksplit8_vec_swz": (8, True, True, True, True, True, False),
    "ksplit8_poll": (8, True, True, True, False, True, True),
    "ksplit8_poll_swz": (8, True, True, True, True, True, True),
    "ksplit8_poll2": (8, True, True, True, False, True, 2),
    "ksplit4": (4, True, True, True, False, False, False),
    "ksplit8_no_cell": (8, False, True, True, False, False, False),
    "ksplit8_no_mma": (8, True, True, False, False, False, False),
    "ksplit8_vec_no_mma": (8, True, True, False, False, True, False),
    "ksplit8_no_load": (8, True, False, True, False, False, False),
    "ksplit8_exchange_only": (8, True, False, False, False, False, False),
    "ksplit8_swz_exchange_only": (8, True, False, False, True, False, False),
}


def compile_only() -> int:
    """Compile every variant for sm_90 (no GPU): registers, spills, shared memory, mma.sync count."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from rnnbench.ops.aot import resource_usage

    names = ksplit_step_kernel.arg_names
    for dt in ("fp16", "bf16"):
        for name, (s, cell, load_h, mma, swz, vec, poll) in VARIANTS.items():
            constexprs = {"H": 768, "PIECES": 3, "S": s, "CELL_ON": cell, "LOAD_H": load_h, "MMA": mma, "SWZ": swz,
                          "VEC": vec, "POLL": poll,
                          "num_warps": 8}
            signature = {n: "constexpr" if n in constexprs else
                         ("*i32" if n == "counter_ptr" else "*fp32" if n in ("bias_ptr", "c_n_ptr") else f"*{dt}")
                         if n.endswith("_ptr") else "i32" for n in names}
            attrs = {(i, ): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
            src = GluonASTSource(ksplit_step_kernel, signature,
                                 constexprs={(names.index(k), ): v for k, v in constexprs.items()}, attrs=attrs)
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
            print(dt, name, resource_usage(k), flush=True)
    return 0


def _per_step_us(run, T: int) -> tuple[float, float]:
    """(µs per step, ms at T) of ``run(T)`` replayed from CUDA graphs at T and 2T steps; the graphs'
    inputs are sliced from tensors the caller keeps alive."""
    times = {}
    for steps in (T, 2 * T):
        run(steps)  # compile, warm
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            run(steps)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            kept = run(steps)
        samples = []
        for _ in range(12):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        del kept
        times[steps] = sorted(samples)[len(samples) // 2]
    return (times[2 * T] - times[T]) * 1000 / T, times[T]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--only", default="", help="comma list of the kernels to time (default: all)")
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    if args.compile_only:
        return compile_only()
    if args.out is None:
        parser.error("OUT_DIR is needed unless --compile-only")
    from rnnbench.env import environment
    from rnnbench.ops.recurrence import layer_launch, recurrence_forward
    from rnnbench.reference import reference_forward
    from rnnbench.verify import relative_error

    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    B, H = args.batch, args.hidden
    f = open(args.out / "ksplit_step.jsonl", "w")
    f.write(json.dumps({"record": "env", **environment()}) + "\n")
    for name in args.dtypes.split(","):
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
        gen = torch.Generator().manual_seed(0)
        scale = H ** -0.5
        w_ih = ((torch.rand(4 * H, H, generator=gen) * 2 - 1) * scale).to(dtype)
        w_hh = ((torch.rand(4 * H, H, generator=gen) * 2 - 1) * scale).to(dtype)
        b_ih = ((torch.rand(4 * H, generator=gen) * 2 - 1) * scale).to(dtype)
        x = torch.randn(2 * args.steps, B, H, generator=gen).to(dtype)
        x_proj = (x.to(dev) @ w_ih.to(dev).t()).contiguous()  # [2T, B, 4H]
        w = w_hh.to(dev)
        bias32 = b_ih.float().to(dev)
        bias = b_ih.to(dev)
        zero_bias = torch.zeros(4 * H, device=dev, dtype=dtype)
        launch = layer_launch("lstm", B, H, dtype, dev)
        short = 64  # accuracy first: every kernel against float64 from the same rounded inputs
        weights = {"weight_ih_l0": w_ih.double(), "weight_hh_l0": w_hh.double(), "bias_ih_l0": b_ih.double(),
                   "bias_hh_l0": torch.zeros(4 * H, dtype=torch.float64)}
        zeros = torch.zeros(1, B, H, dtype=torch.float64)
        ref_out, (_, ref_c) = reference_forward("lstm", weights, x[:short].double(), (zeros, zeros), 1)
        xs = x_proj[:short].contiguous()
        errors = {}
        for v in ("ksplit8", "ksplit8_swz", "ksplit8_vec", "ksplit8_vec_swz", "ksplit8_poll", "ksplit8_poll_swz",
                  "ksplit8_poll2", "ksplit4"):
            s, cell, load_h, mma, swz, vec, poll = VARIANTS[v]
            h_buf, c_n = ksplit_forward(xs, w, bias32, s=s, swz=swz, vec=vec, poll=poll)
            errors[f"{v}_output"] = relative_error(h_buf[1:].cpu().double(), ref_out)
            errors[f"{v}_c_n"] = relative_error(c_n.cpu().double(), ref_c[0])
        ours = recurrence_forward("lstm", xs, w, bias, zero_bias, None, None, launch, False)
        errors["gluon_output"] = relative_error(ours[0][1:].cpu().double(), ref_out)
        errors["gluon_c_n"] = relative_error(ours[2][0].cpu().double(), ref_c[0])
        print(name, {k: f"{v:.2e}" for k, v in errors.items()}, flush=True)
        lstm = torch.nn.LSTM(H, H).to(dev, dtype)
        xin = x.to(dev)
        timed = {"gluon": lambda T: recurrence_forward("lstm", x_proj[:T], w, bias, zero_bias, None, None, launch,
                                                       False),
                 "cudnn_whole_call": lambda T: lstm(xin[:T])}
        for v, args_v in VARIANTS.items():
            timed[v] = (lambda s, cell, load_h, mma, swz, vec, poll: lambda T: ksplit_forward(
                x_proj[:T], w, bias32, s=s, cell=cell, load_h=load_h, mma=mma, swz=swz, vec=vec, poll=poll))(*args_v)
        if args.only:
            timed = {k: v for k, v in timed.items() if k in args.only.split(",")}
        order = list(timed) + list(reversed(timed))  # A B ... B A
        results = {}
        with torch.no_grad():
            for kernel in order:
                us, ms = _per_step_us(timed[kernel], args.steps)
                results.setdefault(kernel, []).append((us, ms))
        for kernel, runs in results.items():
            us = sum(r[0] for r in runs) / len(runs)
            row = {"dtype": name, "batch_size": B, "hidden_size": H, "kernel": kernel, "us_per_step": us,
                   "us_per_step_runs": [r[0] for r in runs], "ms_at_T": [r[1] for r in runs], "T": args.steps,
                   **errors}
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"{name} B{B} H{H} {kernel:22s} {us:6.3f} µs/step  (runs {', '.join(f'{r[0]:.3f}' for r in runs)})",
                  flush=True)
    f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
