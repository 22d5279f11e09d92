"""The recurrent matmul with its reduction split across warps (a batched tl.dot, which Triton runs
on mma.sync), in the dot floor's step (matmul, h out, barrier), at FlashRNN's shape: every warp
multiplies its quarter (or eighth) of K, the partials summed across warps. Run from the
repository root: ``python .../ksplit_floor.py compile`` (sm_90 resources, no GPU) or ``time``."""
import torch, triton, triton.language as tl, sys
sys.path.insert(0, "src")
from rnnbench.ops.common import _grid_barrier, _release_counters, _split_gates

@triton.jit(do_not_specialize=["T", "B"])
def ksplit_floor_kernel(h_buf_ptr, w_ptr, counters_ptr, T, B, H: tl.constexpr, BLOCK_H: tl.constexpr,
                        BLOCK_B: tl.constexpr, S: tl.constexpr, KS: tl.constexpr):
    """dot floor with the reduction split S ways across warps (a batched mma.sync dot)."""
    pid = tl.program_id(0)
    ROWS: tl.constexpr = 4 * BLOCK_H
    s = tl.arange(0, S)[:, None, None]
    m = tl.arange(0, ROWS)[None, :, None]
    kk = tl.arange(0, KS)[None, None, :]
    k = s * KS + kk
    w_rows = (m // BLOCK_H) * H + pid * BLOCK_H + m % BLOCK_H
    w3 = tl.load(w_ptr + w_rows * H + k, mask=k < H, other=0.0)  # [S, ROWS, KS]
    sb = tl.arange(0, S)[:, None, None]
    kb = tl.arange(0, KS)[None, :, None]
    bb = tl.arange(0, BLOCK_B)[None, None, :]
    kh = sb * KS + kb
    hmask = (kh < H) & (bb < B)
    units = pid * BLOCK_H + tl.arange(0, BLOCK_H)
    rows = tl.arange(0, BLOCK_B)
    mask = (units < H)[:, None] & (rows < B)[None, :]
    plane = B * H
    t = 0
    while t < T:
        h3 = tl.load(h_buf_ptr + t * plane + bb * H + kh, mask=hmask, other=0.0, cache_modifier=".cg")  # [S, KS, BB]
        acc3 = tl.dot(w3, h3)  # [S, ROWS, BB] fp32
        acc = tl.sum(acc3, axis=0)
        out, _, _, _ = _split_gates(acc, BLOCK_H, BLOCK_B)
        tl.store(h_buf_ptr + (t + 1) * plane + rows[None, :] * H + units[:, None], out.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if t + 1 < T:
            _grid_barrier(counters_ptr, tl.num_programs(0) * (t + 1))
        t += 1
    _release_counters(counters_ptr)

def run(h_buf, w, block_h, s, num_warps=4):
    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    counters = torch.zeros(2, dtype=torch.int32, device=h_buf.device)
    kp = 1 << (H - 1).bit_length()
    ksplit_floor_kernel[(H // block_h, 1)](h_buf, w, counters, T, B, H=H, BLOCK_H=block_h, BLOCK_B=16, S=s, KS=kp // s, num_warps=num_warps)
    return h_buf

if __name__ == "__main__" and sys.argv[1:] == ["compile"]:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from rnnbench.ops.aot import resource_usage
    names = ksplit_floor_kernel.arg_names
    for bh, s, nw in [(8, 4, 4), (16, 4, 4), (8, 8, 8), (16, 8, 8), (8, 2, 4)]:
        kp = 1024
        cx = {"H": 768, "BLOCK_H": bh, "BLOCK_B": 16, "S": s, "KS": kp // s}
        sig = {n: "constexpr" if n in cx else ("*i32" if n == "counters_ptr" else "*fp16") if n.endswith("_ptr") else "i32" for n in names}
        attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
        src = ASTSource(ksplit_floor_kernel, sig, constexprs={(names.index(k),): v for k, v in cx.items()}, attrs=attrs)
        try:
            kc = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw})
            print(bh, s, nw, resource_usage(kc))
        except Exception as e:
            print(bh, s, nw, "FAILED", str(e).splitlines()[0][:200])

if __name__ == "__main__" and sys.argv[1:2] == ["time"]:
    # (run then from benchmarks/, beside the Gluon probe, now gluon_step_parts.py here)
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from gluon_step_parts import _per_step_us, gluon_forward
    from rnnbench.ops import floor
    dev = torch.device("cuda")
    B, H = 16, 768
    for dtype in (torch.float16,):
        w = (torch.randn(4 * H, H, device=dev) * H ** -0.5).to(dtype)
        x_proj = torch.randn(1024, B, 4 * H, device=dev).to(dtype)
        bias = torch.zeros(4 * H, device=dev)
        # correctness of the split: one step from a random h0 against torch
        h_buf = torch.zeros(2, B, H, device=dev, dtype=dtype)
        h_buf[0] = torch.randn(B, H, device=dev).to(dtype)
        for bh, s, nw in [(8, 4, 4), (8, 8, 8), (16, 8, 8)]:
            hb = h_buf.clone()
            run(hb, w, bh, s, nw)
            ref = (hb[0].float() @ w.float().t())[:, :H]  # gate i block of every unit
            print("ksplit", bh, s, nw, "max err", (hb[1].float() - ref).abs().max().item(), flush=True)
        cases = {
            "gluon_no_cell": lambda T: gluon_forward(x_proj[:T], w, bias, cell=False),
            "tl_dot_floor": lambda T: floor.dot_floor(torch.zeros(T + 1, B, H, device=dev, dtype=dtype), w, 16, block_k=256),
        }
        for bh, s, nw in [(8, 4, 4), (8, 8, 8), (16, 8, 8)]:
            cases[f"ksplit_bh{bh}_s{s}_w{nw}"] = (lambda bh, s, nw: lambda T: run(torch.zeros(T + 1, B, H, device=dev, dtype=dtype), w, bh, s, nw))(bh, s, nw)
        for name, fn in cases.items():
            us, ms = _per_step_us(fn, 512)
            print(f"{name:24s} {us:6.3f} us/step", flush=True)
