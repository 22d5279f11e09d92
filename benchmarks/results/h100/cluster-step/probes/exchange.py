"""The floor of a recurrent step split over a cluster of C programs (one batch row a cluster):
each program stores its slice of h_t to global memory, the cluster meets at the hardware cluster
barrier (``barrier.cluster.arrive.release`` / ``wait.acquire``), then every program reads all of
h_t back (through L2). No products: what such a step would pay before any arithmetic, against
the FMA forwards' whole step (GRU at hidden 128, fp32: 0.82 µs, docs/kernels.md).

Kernels are compiled for one program and launched as clusters of C along x by Triton 3.6's C
launcher with ``num_ctas`` = C in the packed metadata. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/cluster-step/probes/exchange.py

Per (C, B, H): µs a step, the slope between T = 30 and T = 330 of the median of 50 graphed
launches (CUDA graph of 20 launches, timed by events)."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _cluster_sync():
    tl.inline_asm_elementwise("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned; "
                              "mov.u32 $0, 0;", "=r,~{memory}", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def exchange_kernel(h_ptr, out_ptr, T, B, C: tl.constexpr, U: tl.constexpr, H: tl.constexpr, SYNC: tl.constexpr):
    """Grid (C, B): program (r, b) owns units [r U, (r + 1) U) of row b. SYNC 0: a CTA barrier
    (one program a row, C = 1); 1: the cluster barrier."""
    rank = tl.program_id(0)
    b = tl.program_id(1)
    units = rank * U + tl.arange(0, U)
    h = tl.zeros([U], dtype=tl.float32) + rank.to(tl.float32)
    acc = tl.zeros([U], dtype=tl.float32)
    for t in range(T):
        base = h_ptr + ((t % 2) * B + b) * H
        tl.store(base + units, h)
        if SYNC == 0:
            tl.debug_barrier()
        else:
            _cluster_sync()
        everything = tl.load(base + tl.arange(0, H), cache_modifier=".cg")
        h = h * 0.5 + tl.sum(everything) * 1e-3
        acc += h
    tl.store(out_ptr + b * H + units, acc)


def launcher(C, B, H, T):
    U = H // C
    h = torch.zeros(2, B, H, device="cuda")
    out = torch.zeros(B, H, device="cuda")
    warps = max(1, U // 32)
    compiled = exchange_kernel[(C, B)](h, out, T, B, C=C, U=U, H=H, SYNC=0 if C == 1 else 1, num_warps=warps)
    torch.cuda.synchronize()
    run = compiled.run
    meta = compiled.packed_metadata
    nw, _, shared = meta

    def go(T):
        # grid x = 1 cluster of C along x (gridDimX = 1 * C), one cluster a row
        run.launch(1, B, 1, torch.cuda.current_stream().cuda_stream, compiled.function, 0, 0, None, None,
                   (nw, C, shared), None, None, None, h, out, T, B, C, U, H, 1)
    if C == 1:
        def go(T):  # noqa: F811
            exchange_kernel[(1, B)](h, out, T, B, C=C, U=U, H=H, SYNC=0, num_warps=warps)
    return go, out


def per_launch_us(go, T, reps=20, rounds=50):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        go(T)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for _ in range(reps):
            go(T)
    times = []
    for _ in range(rounds):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        e.record()
        e.synchronize()
        times.append(a.elapsed_time(e) * 1000 / reps)
    return sorted(times)[len(times) // 2]


def main():
    print(torch.cuda.get_device_name(), torch.__version__, triton.__version__)
    print("C  B   H    launch T=30  T=330  µs/step")
    rows = []
    for H in (128, 256):
        for B in (20, 32):
            for C in (1, 2, 4, 8):
                if H // C < 16:
                    continue
                try:
                    go, out = launcher(C, B, H, 30)
                    t30 = per_launch_us(go, 30)
                    t330 = per_launch_us(go, 330)
                    ref_go, ref_out = launcher(1, B, H, 30)
                except Exception as e:  # noqa: BLE001
                    print(f"{C} {B} {H} failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                rows.append((C, B, H, t30, t330, (t330 - t30) / 300))
                print(f"{C}  {B:3d} {H:4d} {t30:10.2f} {t330:7.2f} {(t330 - t30) / 300:8.3f}", flush=True)
    # (not a check: h starts at each program's rank, so runs of different C start from different states)
    for H in (128,):
        ref_go, ref_out = launcher(1, 32, H, 30)
        ref_go(30)
        torch.cuda.synchronize()
        for C in (2, 4, 8):
            go, out = launcher(C, 32, H, 30)
            go(30)
            torch.cuda.synchronize()
            print(f"C={C}: max |out - C1 out| = {(out - ref_out).abs().max().item():.3e}")


if __name__ == "__main__":
    sys.exit(main())
