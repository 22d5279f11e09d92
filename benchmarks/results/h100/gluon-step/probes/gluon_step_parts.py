"""A probe: the LSTM forward step at FlashRNN's shape written in Gluon, against our `tl` kernel (one GPU).

    PYTHONPATH=src python3 benchmarks/results/h100/gluon-step/probes/gluon_step_parts.py OUT_DIR [--dtypes fp16,bf16]
    ... --compile-only      # sm_90 compile and resource use, no GPU needed (Triton 3.6)

Why: at batch 16, hidden 768 our `tl` forward kernel takes about 2.7 µs a step against cuDNN's
fp16 persistent kernel's 2.0 (docs/kernels.md, "Arriving at the barrier first"), and the `tl`
language leaves two costs in every step that Triton's lower-level Gluon lets a kernel avoid:

- **a wait per piece of h**: `tl.dot` outside a pipelined loop waits for its wgmma chain before
  the next dot, so h staged in three pieces of 256 columns is three waits a step; here the three
  pieces go to three shared-memory buffers and three asynchronous wgmma chains, one wait;
- **layout conversions**: `tl` loads the step's input projection in a coalesced layout and
  converts it to the accumulator's (through shared memory) every step; here the gates leave the
  accumulator once, through shared memory, into the layout the cell, the input's loads and the
  store of h_t all use.

Everything else is the `tl` kernel's design (docs/kernels.md, "One layer, one direction"): one
program per 16 hidden units (a 64-row stacked tile of W_hh, gates i, f, g, o, resident in shared
memory), h_t exchanged through global memory and read back through L2, the same atomic-counter
grid barrier, fp32 cell state, tanh and sigmoid on the MUFU as `Plan.fast_activations`. Forward
only, no saved activations, h0 = c0 = 0, batch up to 16, hidden a multiple of 256: a probe of the
step, not a kernel of the package.

Measured, each against float64 first (output and c_n, relative error as the engine's
``verify.relative_error``): per step (graph replays at T and 2T, the difference over T) the
Gluon step with and without the cell (``CELL=False``: matmul, h out, barrier, as
``ops.floor.dot_floor``) beside our `tl` forward kernel (``recurrence_forward``, default plan) and
``dot_floor``. Writes ``OUT_DIR/gluon_step.jsonl`` and prints a table.
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
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))

BLOCK_H = 16  # hidden units a program: 4 gates x 16 = 64 rows, one wgmma's height
BLOCK_B = 16  # batch rows (the probe's whole batch)
PIECE = 256  # columns of each resident weight piece and staged piece of h


@gluon.jit
def _tanh_fast(x):
    return gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x], dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def _sigmoid_fast(x):
    return 0.5 * _tanh_fast(0.5 * x) + 0.5


@gluon.jit
def _load_pieces(src, rows, PIECES: gl.constexpr, PW: gl.constexpr, POLL: gl.constexpr):
    """The pieces of one step's h ``[BB, PW]`` each, every load issued before any is used; polled
    loads are volatile (read from L2 every time round)."""
    pieces = ()
    for i in gl.static_range(PIECES):
        if POLL:
            piece = gl.load(src + i * PW, mask=rows, other=0.0, volatile=True)
        else:
            piece = gl.load(src + i * PW, mask=rows, other=0.0, cache_modifier=".cg")
        pieces = pieces + (piece, )
    return pieces


@gluon.jit
def _sentinels(pieces, PIECES: gl.constexpr):
    """How many elements of ``pieces`` (16-bit) still hold the sentinel 0xFFFF (a NaN no GPU
    arithmetic returns): written by no program yet."""
    bad = 0
    for i in gl.static_range(PIECES):
        hit = (pieces[i].to(gl.int16, bitcast=True) == -1).to(gl.int32)
        bad += gl.sum(gl.sum(hit, axis=1), axis=0)
    return bad


@gluon.jit(do_not_specialize=["T", "B"])
def lstm_step_kernel(x_proj_ptr, w_ptr, bias_ptr, h_buf_ptr, c_n_ptr, counter_ptr, T, B,
                     H: gl.constexpr, PIECES: gl.constexpr, CELL: gl.constexpr, SWIZZLE: gl.constexpr,
                     LOAD_H: gl.constexpr, MMA: gl.constexpr, POLL: gl.constexpr, num_warps: gl.constexpr):
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` zeros) gets the LSTM's h_1..h_T from ``x_proj [T, B, 4H]``
    (x W_ih^T, no bias), ``w [4H, H]`` (W_hh, torch.nn's layout) and ``bias [4H]`` (fp32, b_ih +
    b_hh); ``c_n [B, H]`` fp32. One program per 16 units; every program resident (grid barrier)."""
    dt: gl.constexpr = w_ptr.dtype.element_ty
    BH: gl.constexpr = 16
    BB: gl.constexpr = 16
    ROWS: gl.constexpr = 4 * BH
    PW: gl.constexpr = 256
    W_LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    H_LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    # The cell's tiles [units, batch rows]: units contiguous in memory, so they run down a thread.
    CELL_L: gl.constexpr = gl.BlockedLayout([2, 1], [8, 4], [1, num_warps], [0, 1])
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BB, 16])
    W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([ROWS, PW], dt)
    H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BB, PW], dt)
    # Swizzled: read back down a unit column, the unswizzled [64, 16] rows put 8 lanes on one bank.
    G_SMEM: gl.constexpr = gl.SwizzledSharedLayout(2, 1, 8, [1, 0]) if SWIZZLE else gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    pid = gl.program_id(0)

    # The stacked tile: row m is gate m // 16, unit pid * 16 + m % 16; resident for every step.
    m = gl.arange(0, ROWS, layout=gl.SliceLayout(1, W_LOAD))
    w_rows = (m // BH) * H + pid * BH + m % BH
    kw = gl.arange(0, PW, layout=gl.SliceLayout(0, W_LOAD))
    w_smem = gl.allocate_shared_memory(dt, [PIECES, ROWS, PW], W_SMEM)
    for i in gl.static_range(PIECES):
        w_smem.index(i).store(gl.load(w_ptr + w_rows[:, None] * H + (i * PW + kw)[None, :]))
    # One buffer per piece of h (not one buffer indexed): the compiler's barrier analysis then sees
    # three stores to three buffers, not to one, and puts no CTA barrier between them.
    h_smem = ()
    for i in gl.static_range(PIECES):
        h_smem = h_smem + (gl.allocate_shared_memory(dt, [BB, PW], H_SMEM), )
    g_smem = gl.allocate_shared_memory(gl.float32, [ROWS, BB], G_SMEM)
    fence_async_shared()

    hb = gl.arange(0, BB, layout=gl.SliceLayout(1, H_LOAD))
    hk = gl.arange(0, PW, layout=gl.SliceLayout(0, H_LOAD))
    h_rows = (hb < B)[:, None]
    u = pid * BH + gl.arange(0, BH, layout=gl.SliceLayout(1, CELL_L))
    b = gl.arange(0, BB, layout=gl.SliceLayout(0, CELL_L))
    mask = (b < B)[None, :] & (u < H)[:, None]
    hid = b[None, :] * H + u[:, None]
    xid = b[None, :] * (4 * H) + u[:, None]
    plane_h = B * H
    plane_x = B * 4 * H
    bias_i = gl.load(bias_ptr + u)[:, None]
    bias_f = gl.load(bias_ptr + H + u)[:, None]
    bias_g = gl.load(bias_ptr + 2 * H + u)[:, None]
    bias_o = gl.load(bias_ptr + 3 * H + u)[:, None]
    c = gl.zeros([BH, BB], gl.float32, CELL_L)
    if CELL:
        x_i = gl.load(x_proj_ptr + xid, mask=mask, other=0.0).to(gl.float32)
        x_f = gl.load(x_proj_ptr + H + xid, mask=mask, other=0.0).to(gl.float32)
        x_g = gl.load(x_proj_ptr + 2 * H + xid, mask=mask, other=0.0).to(gl.float32)
        x_o = gl.load(x_proj_ptr + 3 * H + xid, mask=mask, other=0.0).to(gl.float32)
    programs = gl.num_programs(0)
    t = 0
    while t < T:
        # h_{t-1}: every program's, through L2 (.cg: an L1 line from an earlier step would be stale).
        # Every piece's load is issued before any store into shared memory waits for its data.
        if LOAD_H:  # (off: a probe of the step's parts, the product of stale h)
            src = h_buf_ptr + t * plane_h + hb[:, None] * H + hk[None, :]
            pieces = _load_pieces(src, h_rows, PIECES, PW, POLL)
            if POLL:  # no barrier: read again until no element is still the sentinel
                while _sentinels(pieces, PIECES) > 0:
                    pieces = _load_pieces(src, h_rows, PIECES, PW, POLL)
            for i in gl.static_range(PIECES):
                h_smem[i].store(pieces[i])
            fence_async_shared()
        acc = gl.zeros([ROWS, BB], gl.float32, ACC)
        if MMA:  # (off: a probe of the step's parts, no product)
            for i in gl.static_range(PIECES):
                acc = warpgroup_mma(w_smem.index(i), h_smem[i].permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        # The gates leave the accumulator (a warp per gate) once, through shared memory.
        g_smem.store(acc)
        gl.thread_barrier()
        if CELL:
            gi = g_smem.slice(0, BH, dim=0).load(CELL_L) + x_i + bias_i
            gf = g_smem.slice(BH, BH, dim=0).load(CELL_L) + x_f + bias_f
            gg = g_smem.slice(2 * BH, BH, dim=0).load(CELL_L) + x_g + bias_g
            go = g_smem.slice(3 * BH, BH, dim=0).load(CELL_L) + x_o + bias_o
            c = _sigmoid_fast(gf) * c + _sigmoid_fast(gi) * _tanh_fast(gg)
            h = _sigmoid_fast(go) * _tanh_fast(c)
        else:
            h = g_smem.slice(0, BH, dim=0).load(CELL_L)
        gl.store(h_buf_ptr + (t + 1) * plane_h + hid, h.to(dt), mask=mask)
        if t + 1 < T and not POLL:
            gl.thread_barrier()  # every thread's store before the release
            gl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
        if CELL:  # the next step's input, loaded before the wait (no other program writes it)
            nxt = x_proj_ptr + gl.minimum(t + 1, T - 1) * plane_x
            x_i = gl.load(nxt + xid, mask=mask, other=0.0).to(gl.float32)
            x_f = gl.load(nxt + H + xid, mask=mask, other=0.0).to(gl.float32)
            x_g = gl.load(nxt + 2 * H + xid, mask=mask, other=0.0).to(gl.float32)
            x_o = gl.load(nxt + 3 * H + xid, mask=mask, other=0.0).to(gl.float32)
        if t + 1 < T and not POLL:
            while gl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < programs * (t + 1):
                pass
            gl.thread_barrier()
        t += 1
    gl.store(c_n_ptr + hid, c, mask=mask)


def gluon_forward(x_proj: torch.Tensor, w_hh: torch.Tensor, bias: torch.Tensor, cell: bool = True, swizzle: bool = True,
                  load_h: bool = True, mma: bool = True, poll: bool = False):
    """``(h_buf [T+1, B, H], c_n [B, H] fp32)`` from :func:`lstm_step_kernel`."""
    T, B, G = x_proj.shape
    H = G // 4
    if B > BLOCK_B or H % PIECE:
        raise ValueError(f"the probe takes batch <= {BLOCK_B} and hidden a multiple of {PIECE}")
    h_buf = torch.zeros(T + 1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    if poll:  # every slot a step writes starts as the sentinel (h_buf[0], h0, stays zeros)
        h_buf[1:].view(torch.int16).fill_(-1)
    c_n = torch.empty(B, H, device=x_proj.device, dtype=torch.float32)
    counter = torch.zeros(1, device=x_proj.device, dtype=torch.int32)
    lstm_step_kernel[(H // BLOCK_H, )](x_proj, w_hh, bias, h_buf, c_n, counter, T, B, H=H, PIECES=H // PIECE,
                                       CELL=cell, SWIZZLE=swizzle, LOAD_H=load_h, MMA=mma, POLL=poll, num_warps=4)
    return h_buf, c_n


def compile_only() -> int:
    """Compile the kernel for sm_90 (no GPU): registers, spills, shared memory, wgmma waits."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from rnnbench.ops.aot import resource_usage

    names = lstm_step_kernel.arg_names
    for dt in ("fp16", "bf16"):
        for cell in (True, False):
            constexprs = {"H": 768, "PIECES": 3, "CELL": cell, "SWIZZLE": True, "LOAD_H": True, "MMA": True, "POLL": True,
                          "num_warps": 4}
            signature = {n: "constexpr" if n in constexprs else
                         ("*i32" if n == "counter_ptr" else "*fp32" if n in ("bias_ptr", "c_n_ptr") else f"*{dt}")
                         if n.endswith("_ptr") else "i32" for n in names}
            attrs = {(i, ): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
            src = GluonASTSource(lstm_step_kernel, signature,
                                 constexprs={(names.index(k), ): v for k, v in constexprs.items()}, attrs=attrs)
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
            print(dt, "cell" if cell else "no cell", resource_usage(k))
    return 0


def _per_step_us(run, T: int) -> tuple[float, float]:
    """(µs per step, ms at T) of ``run(T)`` replayed from CUDA graphs at T and 2T steps."""
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
            run(steps)
        samples = []
        for _ in range(12):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        times[steps] = sorted(samples)[len(samples) // 2]
    return (times[2 * T] - times[T]) * 1000 / T, times[T]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    if args.compile_only:
        return compile_only()
    from rnnbench.ops import floor
    from rnnbench.ops.recurrence import layer_launch, recurrence_forward
    from rnnbench.reference import reference_forward
    from rnnbench.verify import relative_error

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    dev = torch.device("cuda")
    B, H = args.batch, args.hidden
    for name in args.dtypes.split(","):
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
        gen = torch.Generator().manual_seed(0)
        scale = H ** -0.5
        w_ih = (torch.rand(4 * H, H, generator=gen) * 2 - 1) * scale
        w_hh = (torch.rand(4 * H, H, generator=gen) * 2 - 1) * scale
        b_ih = (torch.rand(4 * H, generator=gen) * 2 - 1) * scale
        x = torch.randn(2 * args.steps, B, H, generator=gen)
        x_proj = (x.to(dtype).to(dev) @ w_ih.to(dtype).to(dev).t())  # [2T, B, 4H]
        w = w_hh.to(dtype).to(dev)
        bias = b_ih.to(dev)
        zero_bias = torch.zeros(4 * H, device=dev, dtype=dtype)
        launch = layer_launch("lstm", B, H, dtype, dev)
        # Accuracy first, on a short sequence: both kernels against float64 from the same rounded inputs.
        short = 64
        weights = {"weight_ih_l0": w_ih.to(dtype).double(), "weight_hh_l0": w_hh.to(dtype).double(),
                   "bias_ih_l0": b_ih.double(), "bias_hh_l0": torch.zeros(4 * H, dtype=torch.float64)}
        zeros = torch.zeros(1, B, H, dtype=torch.float64)
        ref_out, (_, ref_c) = reference_forward("lstm", weights, x[:short].to(dtype).double(), (zeros, zeros), 1)
        ref_c = ref_c[0]
        h_buf, c_n = gluon_forward(x_proj[:short].contiguous(), w, bias)
        ours = recurrence_forward("lstm", x_proj[:short].contiguous(), w, bias.to(dtype), zero_bias, None, None,
                                  launch, False)
        h_poll, c_poll = gluon_forward(x_proj[:short].contiguous(), w, bias, poll=True)
        errors = {"gluon_output": relative_error(h_buf[1:].cpu().double(), ref_out),
                  "poll_output": relative_error(h_poll[1:].cpu().double(), ref_out),
                  "poll_c_n": relative_error(c_poll.cpu().double(), ref_c),
                  "gluon_c_n": relative_error(c_n.cpu().double(), ref_c),
                  "tl_output": relative_error(ours[0][1:].cpu().double(), ref_out),
                  "tl_c_n": relative_error(ours[2][0].cpu().double(), ref_c)}
        timed = {
            "gluon": lambda T: gluon_forward(x_proj[:T], w, bias),
            "gluon_no_cell": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False),
            "gluon_poll": lambda T: gluon_forward(x_proj[:T], w, bias, poll=True),
            "gluon_poll_no_cell": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False, poll=True),
            "gluon_unswizzled": lambda T: gluon_forward(x_proj[:T], w, bias, swizzle=False),
            # The step's parts (outputs meaningless): no product, then no h read either.
            "gluon_no_cell_no_mma": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False, mma=False),
            "gluon_exchange_only": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False, mma=False, load_h=False),
            "gluon_no_cell_no_load": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False, load_h=False),
            "tl": lambda T: recurrence_forward("lstm", x_proj[:T], w, bias.to(dtype), zero_bias, None, None, launch,
                                               False),
            "tl_dot_floor": lambda T: floor.dot_floor(torch.zeros(T + 1, B, H, device=dev, dtype=dtype), w, 16,
                                                      block_k=PIECE),
        }
        for kernel, run in timed.items():
            us, ms = _per_step_us(run, args.steps)
            row = {"dtype": name, "batch_size": B, "hidden_size": H, "kernel": kernel, "us_per_step": us,
                   "ms_at_T": ms, "T": args.steps, **errors}
            rows.append(row)
            print(f"{name} B{B} H{H} {kernel:14s} {us:6.3f} µs/step  {ms:7.3f} ms at T={args.steps}  "
                  f"errors gluon {errors['gluon_output']:.2e}/{errors['gluon_c_n']:.2e} "
                  f"poll {errors['poll_output']:.2e}/{errors['poll_c_n']:.2e} "
                  f"tl {errors['tl_output']:.2e}/{errors['tl_c_n']:.2e}", flush=True)
    from rnnbench.env import environment

    with open(args.out / "gluon_step.jsonl", "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")  # the machine the rows ran on
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
