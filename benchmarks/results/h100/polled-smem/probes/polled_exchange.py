"""A probe: the Gluon LSTM forward's exchange of h polled through shared memory instead of the
atomic-counter barrier (one GPU, sm_90, Triton 3.6).

    PYTHONPATH=src python3 benchmarks/results/h100/polled-smem/probes/polled_exchange.py OUT_DIR      # on the GPU
    PYTHONPATH=src /tmp/v36/bin/python benchmarks/results/h100/polled-smem/probes/polled_exchange.py --compile-only

Why: at FlashRNN's shape (batch 16, hidden 768, fp16) the Gluon step takes about 2.35 µs against
cuDNN's 1.94, and its parts (``results/h200/gluon-step``) are the barrier 0.89 µs, reading h 0.49,
the product 0.57-0.79, the cell 0.33. The barrier is a chain of L2 round trips: the release's
fence waits for h's stores, the arrival's atomic, polls of the count, then h is read. Polling h
itself (each slot of ``h_buf`` filled with a sentinel before the launch; a slot is read again
until no element is the sentinel) removes the fence, the atomic and the count's polls. It was
measured slower twice (``docs/kernels.md``, "Polling h instead of the barrier"; the Gluon probe in
``results/h100/gluon-step``: 3.30 against 2.40 µs), both times with h loaded into registers and
each round's check reduced piece by piece. Here h goes where the barrier kernel puts it,
straight into shared memory by ``cp.async``, and is checked there in one reduction a round:

- ``POLL=0``: the package kernel's exchange (arrive, wait for the count, copy h), the baseline
  (and the package's kernel itself, ``-1``, whose registers differ: 77 against 213 at batch 16,
  hidden 768, sm_90, for reasons not looked into);
- ``POLL=1``: copy every piece, check them all, copy every piece again while any element is the
  sentinel;
- ``POLL=2``: as 1, but copy again only the pieces that still hold a sentinel;
- ``POLL=3``: the barrier's exchange plus POLL=1's check once: what the check costs.

The kernel is ``ops/lstm/gluon.py``'s loop cut to what the probe needs (forward, no saves, no
h0/c0, no projection ahead). Each variant is checked against float64 (output and c_n, 64 steps)
before it is timed; time per step is the difference of CUDA-graph replays at T and 2T over T
(the sentinel fill of ``h_buf`` included: it grows with T), variants in the order A B C D E E D C B A.
Writes ``OUT_DIR/polled_exchange.jsonl`` and prints a table.
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
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "src"))

from rnnbench.ops import gluon_common  # noqa: E402

if not gluon_common.AVAILABLE:
    sys.exit(f"polled_exchange.py: needs Triton {gluon_common.GLUON_VERSIONS[0]}x, the Gluon the kernels were written "
             f"for, not {triton.__version__}")
from rnnbench.ops.gluon_common import _bias, _gate_inputs, _sigmoid, _tanh  # noqa: E402  (lstm.gluon at 9cff0ce)

BLOCK_H = 16
SENTINEL = -1  # 0xFFFF as int16: a NaN no GPU arithmetic returns (conversions give 0x7FFF)


@gluon.jit
def _copy_h(h_smem, src, hb, kh, live, H: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr,
            ONLY: gl.constexpr):
    """Every piece of h (``ONLY`` < 0) or piece ``ONLY`` alone into shared memory by cp.async,
    through L2 (.cg), then wait for this thread's copies."""
    for i in gl.static_range(PIECES):
        if ONLY < 0 or ONLY == i:
            col = i * PIECE + kh
            async_copy.async_copy_global_to_shared(h_smem[i], src + hb[:, None] * H + col[None, :],
                                                   mask=live[:, None], cache_modifier=".cg")
    async_copy.commit_group()
    async_copy.wait_group(0)


@gluon.jit
def _sentinels(h_smem, i: gl.constexpr, LOAD: gl.constexpr):
    """How many elements of piece ``i`` in shared memory are still the sentinel (a CTA-wide count:
    every thread gets the same number)."""
    piece = h_smem[i].load(LOAD).to(gl.int16, bitcast=True)
    hits = (piece == -1).to(gl.int32)
    return gl.sum(gl.sum(hits, axis=1), axis=0)


@gluon.jit(do_not_specialize=["T", "B"])
def poll_kernel(x_proj_ptr, w_hh_ptr, b_ih_ptr, b_hh_ptr, h_buf_ptr, c_n_ptr, counters_ptr, T, B,
                H: gl.constexpr, BLOCK_B: gl.constexpr, PIECE: gl.constexpr, PIECES: gl.constexpr,
                POLL: gl.constexpr, num_warps: gl.constexpr):
    """h_1..h_T into ``h_buf[1:]`` (filled with the sentinel before the launch when ``POLL``), c_T
    into ``c_n`` (fp32); h0 = c0 = 0. H a multiple of ``PIECE``. Grid (H / 16, batch blocks)."""
    dt: gl.constexpr = w_hh_ptr.dtype.element_ty
    BH: gl.constexpr = 16
    ROWS: gl.constexpr = 4 * BH
    LOAD: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [num_warps, 1], [1, 0])
    CELL: gl.constexpr = gl.BlockedLayout([2, 1], [8, 4], [1, num_warps], [0, 1])
    ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                  instr_shape=[16, BLOCK_B, 16])
    W_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([ROWS, PIECE], dt)
    H_SMEM: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_B, PIECE], dt)
    G_SMEM: gl.constexpr = gl.SwizzledSharedLayout(2, 1, 8, [1, 0])
    unit0 = gl.program_id(0) * BH
    row0 = gl.program_id(1) * BLOCK_B
    counter = counters_ptr + gl.program_id(1)

    um = gl.arange(0, BH, layout=gl.SliceLayout(1, LOAD))
    kw = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
    w_smem = gl.allocate_shared_memory(dt, [PIECES, ROWS, PIECE], W_SMEM)
    for i in gl.static_range(PIECES):
        k = i * PIECE + kw
        for gate in gl.static_range(4):
            w = gl.load(w_hh_ptr + (gate * H + unit0) * H + um[:, None] * H + k[None, :])
            w_smem.index(i).slice(gate * BH, BH, dim=0).store(w)
    h_smem = ()
    for i in gl.static_range(PIECES):
        h_smem = h_smem + (gl.allocate_shared_memory(dt, [BLOCK_B, PIECE], H_SMEM), )
    g_smem = gl.allocate_shared_memory(gl.float32, [ROWS, BLOCK_B], G_SMEM)
    fence_async_shared()

    hb = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(1, LOAD))
    kh = gl.arange(0, PIECE, layout=gl.SliceLayout(0, LOAD))
    u = gl.arange(0, BH, layout=gl.SliceLayout(1, CELL))
    b = gl.arange(0, BLOCK_B, layout=gl.SliceLayout(0, CELL))
    unit_mask = u < H - unit0
    mask = unit_mask[:, None] & (b < B - row0)[None, :]
    hid = b[None, :] * H + u[:, None]
    gid = b[None, :] * (4 * H) + u[:, None]
    plane_h = B.to(gl.int64) * H
    plane_g = B.to(gl.int64) * (4 * H)
    h_corner = row0 * H + unit0
    g_corner = row0 * (4 * H) + unit0
    bias_i = _bias(b_ih_ptr + unit0, b_hh_ptr + unit0, u, unit_mask, True, True)
    bias_f = _bias(b_ih_ptr + H + unit0, b_hh_ptr + H + unit0, u, unit_mask, True, True)
    bias_g = _bias(b_ih_ptr + 2 * H + unit0, b_hh_ptr + 2 * H + unit0, u, unit_mask, True, True)
    bias_o = _bias(b_ih_ptr + 3 * H + unit0, b_hh_ptr + 3 * H + unit0, u, unit_mask, True, True)
    c = gl.zeros([BH, BLOCK_B], gl.float32, CELL)
    x_i, x_f, x_g, x_o = _gate_inputs(x_proj_ptr + g_corner, gid, mask, H, 4)
    programs = gl.num_programs(0)
    rounds = 0  # polled copies of h (a piece each under POLL=2)
    t = 0
    while t < T:
        src = h_buf_ptr + t * plane_h + row0 * H
        live = hb < gl.where(t > 0, B - row0, 0)  # h0 = 0: nothing to read at step 0
        _copy_h(h_smem, src, hb, kh, live, H, PIECE, PIECES, -1)
        gl.thread_barrier()
        if POLL == 1:
            bad = 0
            rounds += 1
            for i in gl.static_range(PIECES):
                bad += _sentinels(h_smem, i, LOAD)
            while bad > 0:
                rounds += 1
                gl.thread_barrier()  # every thread's check read before the copies overwrite
                _copy_h(h_smem, src, hb, kh, live, H, PIECE, PIECES, -1)
                gl.thread_barrier()
                bad = 0
                for i in gl.static_range(PIECES):
                    bad += _sentinels(h_smem, i, LOAD)
        if POLL == 3:  # the barrier's exchange plus POLL=1's check, once (its cost alone)
            for i in gl.static_range(PIECES):
                rounds += _sentinels(h_smem, i, LOAD)
        if POLL == 2:
            for i in gl.static_range(PIECES):
                rounds += 1
                while _sentinels(h_smem, i, LOAD) > 0:
                    rounds += 1
                    gl.thread_barrier()
                    _copy_h(h_smem, src, hb, kh, live, H, PIECE, PIECES, i)
                    gl.thread_barrier()
        fence_async_shared()
        gl.thread_barrier()
        acc = gl.zeros([ROWS, BLOCK_B], gl.float32, ACC)
        for i in gl.static_range(PIECES):
            acc = warpgroup_mma(w_smem.index(i), h_smem[i].permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        g_smem.store(acc)
        gl.thread_barrier()
        i_t = _sigmoid(g_smem.slice(0, BH, dim=0).load(CELL) + x_i.to(gl.float32) + bias_i)
        f_t = _sigmoid(g_smem.slice(BH, BH, dim=0).load(CELL) + x_f.to(gl.float32) + bias_f)
        g_t = _tanh(g_smem.slice(2 * BH, BH, dim=0).load(CELL) + x_g.to(gl.float32) + bias_g)
        o_t = _sigmoid(g_smem.slice(3 * BH, BH, dim=0).load(CELL) + x_o.to(gl.float32) + bias_o)
        c = f_t * c + i_t * g_t
        h = o_t * _tanh(c)
        gl.store(h_buf_ptr + (t + 1) * plane_h + h_corner + hid, h.to(dt), mask=mask)
        if POLL == 0 or POLL == 3:
            if t + 1 < T:
                gl.thread_barrier()
                gl.atomic_add(counter, 1, sem="release", scope="gpu")
        step = gl.minimum(t + 1, T - 1)
        x_i, x_f, x_g, x_o = _gate_inputs(x_proj_ptr + step * plane_g + g_corner, gid, mask, H, 4)
        if POLL == 0 or POLL == 3:
            if t + 1 < T:
                while gl.atomic_add(counter, 0, sem="acquire", scope="gpu") < programs * (t + 1):
                    pass
                gl.thread_barrier()
        else:
            gl.thread_barrier()  # the gate tile's reads before the next step's product stores it
        t += 1
    gl.store(c_n_ptr + h_corner + hid, c, mask=mask)
    if POLL:  # (the polled kernels use no counter: their slot holds the rounds they polled)
        gl.store(counters_ptr + gl.num_programs(1) + gl.program_id(1) * programs + gl.program_id(0), rounds)


def forward(x_proj, w_hh, b_ih, b_hh, poll: int, block_b: int, piece: int = 256):
    """``(h_buf [T+1, B, H], c_n [B, H] fp32)`` of the probe's kernel (``poll`` -1: the package's
    kernel, ``lstm_forward_gluon_kernel``, no saves); ``h_buf[0]`` is not written."""
    T, B, H = x_proj.shape[0], x_proj.shape[1], w_hh.shape[1]
    if poll < 0:
        return _package_forward(x_proj, w_hh, b_ih, b_hh, block_b, piece)
    h_buf = torch.empty(T + 1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    if poll in (1, 2):
        h_buf[1:].view(torch.int16).fill_(SENTINEL)
    c_n = torch.empty(B, H, device=x_proj.device, dtype=torch.float32)
    grid = (H // BLOCK_H, triton.cdiv(B, block_b))
    counters = torch.zeros(grid[0] * grid[1] + grid[1], device=x_proj.device, dtype=torch.int32)
    poll_kernel[grid](x_proj, w_hh, b_ih, b_hh, h_buf, c_n, counters, T, B, H=H, BLOCK_B=block_b, PIECE=piece,
                      PIECES=H // piece, POLL=poll, num_warps=4)
    forward.rounds = counters[grid[1]:]
    return h_buf, c_n


def _package_forward(x_proj, w_hh, b_ih, b_hh, block_b: int, piece: int):
    from rnnbench.ops.lstm.gluon import lstm_forward_gluon_kernel

    T, B, H = x_proj.shape[0], x_proj.shape[1], w_hh.shape[1]
    h_buf = torch.empty(T + 1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    h_n = torch.empty(1, B, H, device=x_proj.device, dtype=x_proj.dtype)
    c_n = torch.empty_like(h_n)
    grid = (H // BLOCK_H, triton.cdiv(B, block_b))
    counters = torch.zeros(grid[1], device=x_proj.device, dtype=torch.int32)
    lstm_forward_gluon_kernel[grid](x_proj, w_hh, b_ih, b_hh, h_buf, h_n, h_buf, h_n, c_n, h_n, h_n, counters,
                                    counters, T, B, H=H, HAS_BIAS=True, HAS_H0=False, HAS_C0=False, SAVE=False,
                                    AHEAD=False, BLOCK_B=block_b, PIECE=piece, PIECES=H // piece, num_warps=4)
    return h_buf, c_n[0].float()


def _per_step_us(run, T: int) -> tuple[float, float]:
    """(µs per step, ms at T) of ``run(T)`` replayed from CUDA graphs at T and 2T steps (medians of
    15 replays each)."""
    times = {}
    for steps in (T, 2 * T):
        run(steps)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            run(steps)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            run(steps)
        samples = []
        for _ in range(15):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        times[steps] = sorted(samples)[len(samples) // 2]
    return (times[2 * T] - times[T]) * 1000 / T, times[T]


CASES = [(16, 768, "fp16"), (16, 768, "bf16"), (32, 512, "bf16"), (16, 1024, "bf16"), (32, 1024, "fp16"),
         (128, 512, "bf16")]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
ORDER = (-1, 0, 3, 1, 2, 2, 1, 3, 0, -1)


def measure(out: Path, steps: int) -> list[dict]:
    from rnnbench.reference import reference_forward
    from rnnbench.verify import relative_error

    dev = torch.device("cuda")
    rows = []
    for batch, hidden, name in CASES:
        dtype = DTYPES[name]
        gen = torch.Generator().manual_seed(0)
        bound = hidden ** -0.5
        w_ih, w_hh = [((torch.rand(4 * hidden, hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
        b_ih, b_hh = [((torch.rand(4 * hidden, generator=gen) * 2 - 1) * bound).to(dtype) for _ in range(2)]
        x = torch.randn(2 * steps, batch, hidden, generator=gen).to(dtype)
        x_proj = (x.to(dev) @ w_ih.to(dev).t()).contiguous()
        w, bi, bh = w_hh.to(dev), b_ih.to(dev), b_hh.to(dev)
        block_b = 16 if batch <= 16 else 32
        weights = {"weight_ih_l0": w_ih.double(), "weight_hh_l0": w_hh.double(), "bias_ih_l0": b_ih.double(),
                   "bias_hh_l0": b_hh.double()}
        zeros = torch.zeros(1, batch, hidden, dtype=torch.float64)
        ref_out, (_, ref_c) = reference_forward("lstm", weights, x[:64].double(), (zeros, zeros), 1)
        errors, rounds = {}, {}
        for poll in sorted(set(ORDER)):
            h_buf, c_n = forward(x_proj[:64], w, bi, bh, poll, block_b)
            errors[poll] = max(relative_error(h_buf[1:].cpu().double(), ref_out),
                               relative_error(c_n.cpu().double(), ref_c[0]))
            if poll in (1, 2):  # copies of h a step, each program over a long run (a piece each under POLL=2)
                forward(x_proj[:steps], w, bi, bh, poll, block_b)
                rounds[poll] = forward.rounds.float().mean().item() / steps
        timed = {}
        for poll in ORDER:
            us, ms = _per_step_us(lambda T, p=poll: forward(x_proj[:T], w, bi, bh, p, block_b), steps)
            timed.setdefault(poll, []).append(us)
        for poll, samples in timed.items():
            rows.append({"batch_size": batch, "hidden_size": hidden, "dtype": name, "poll": poll,
                         "programs": hidden // BLOCK_H * triton.cdiv(batch, block_b), "us_per_step": samples,
                         "us_per_step_mean": sum(samples) / len(samples), "max_rel_error": errors[poll],
                         "copies_per_step": rounds.get(poll),
                         "T": steps})
            with open(out / "polled_exchange.jsonl", "a") as f:
                f.write(json.dumps(rows[-1]) + "\n")
    return rows


def compile_only() -> int:
    """Compile every variant for sm_90 (no GPU; Triton 3.6): registers, spills, shared memory."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from rnnbench.ops.aot import resource_usage

    names = poll_kernel.arg_names
    for batch, hidden, name in CASES:
        for poll in (0, 1, 2, 3):
            c = {"H": hidden, "BLOCK_B": 16 if batch <= 16 else 32, "PIECE": 256, "PIECES": hidden // 256, "POLL": poll,
                 "num_warps": 4}
            sig = {n: "constexpr" if n in c else ("*i32" if n == "counters_ptr" else "*fp32" if n == "c_n_ptr" else
                                                  f"*{name}") if n.endswith("_ptr") else "i32" for n in names}
            attrs = {(i, ): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
            src = GluonASTSource(poll_kernel, sig, constexprs={(names.index(k), ): v for k, v in c.items()}, attrs=attrs)
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
            print(batch, hidden, name, f"POLL={poll}", resource_usage(k))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--steps", type=int, default=512)
    parser.add_argument("--compile-only", action="store_true")
    args = parser.parse_args(argv)
    if args.compile_only:
        return compile_only()
    if args.out is None or not torch.cuda.is_available():
        parser.error("give OUT_DIR, on a machine with a CUDA device (or --compile-only)")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = measure(args.out, args.steps)
    base = {(r["batch_size"], r["hidden_size"], r["dtype"]): r["us_per_step_mean"] for r in rows if r["poll"] == -1}
    print(f"{'batch':>5} {'hidden':>6} {'dtype':>5} {'poll':>4} {'programs':>8} {'us/step':>8} {'x package':>9} "
          f"{'error':>9} {'copies':>6}  samples")
    for r in rows:
        key = (r["batch_size"], r["hidden_size"], r["dtype"])
        print(f"{key[0]:>5} {key[1]:>6} {key[2]:>5} {r['poll']:>4} {r['programs']:>8} {r['us_per_step_mean']:>8.3f} "
              f"{base[key] / r['us_per_step_mean']:>9.3f} {r['max_rel_error']:>9.2e} "
              f"{r['copies_per_step'] or 0:>6.2f}  "
              + " ".join(f"{s:.3f}" for s in r["us_per_step"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
