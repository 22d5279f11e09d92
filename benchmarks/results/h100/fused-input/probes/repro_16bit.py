"""A standalone try at the 16-bit fault of the fused input projection (no rnnbench imports): one
program, a `while` loop over T steps, h on chip; per step `acc = W_in @ x_t^T` (resident W_in
[HP, IP]), then `acc += W_hh @ h` (resident W_hh [HP, HP]), `h = tanh(acc)`, h_t stored. Each
variant in its own process; the output against float64. Prints one line per variant.

    python3 repro_16bit.py
"""
import os
import subprocess
import sys
import tempfile

CODE = r'''
import sys, torch, triton, triton.language as tl

@triton.jit(do_not_specialize=["T", "B"])
def k(x_ptr, w_in_ptr, w_hh_ptr, out_ptr, T, B, I: tl.constexpr, IP: tl.constexpr, H: tl.constexpr,
      HP: tl.constexpr, BB: tl.constexpr, CARRY: tl.constexpr):
    u = tl.arange(0, HP)
    c = tl.arange(0, IP)
    kk = tl.arange(0, HP)
    r = tl.program_id(0) * BB + tl.arange(0, BB)
    w_in = tl.load(w_in_ptr + u[:, None] * I + c[None, :], mask=(u < H)[:, None] & (c < I)[None, :], other=0.0)
    w_hh = tl.load(w_hh_ptr + u[:, None] * H + kk[None, :], mask=(u < H)[:, None] & (kk < H)[None, :], other=0.0)
    h = tl.zeros([HP, BB], dtype=tl.float32)
    xm = (r < B)[:, None] & (c < I)[None, :]
    xt = tl.load(x_ptr + r[:, None] * I + c[None, :], mask=xm, other=0.0)
    t = 0
    while t < T:
        if not CARRY:
            xt = tl.load(x_ptr + t * B * I + r[:, None] * I + c[None, :], mask=xm, other=0.0)
        acc = tl.dot(w_in, tl.trans(xt), tl.zeros([HP, BB], dtype=tl.float32))
        acc = tl.dot(w_hh, h.to(w_hh.dtype), acc)
        e = tl.exp(-2.0 * tl.abs(acc))
        h = tl.where(acc >= 0, 1.0, -1.0) * (1.0 - e) / (1.0 + e)
        tl.store(out_ptr + t * B * H + r[None, :] * H + u[:, None], h, mask=(u < H)[:, None] & (r < B)[None, :])
        if CARRY:
            nxt = tl.minimum(t + 1, T - 1)
            xt = tl.load(x_ptr + nxt * B * I + r[:, None] * I + c[None, :], mask=xm, other=0.0)
        t += 1

dt, I, warps, carry = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dt]
T, B, H, BB = 30, 20, 100, 16
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, I, device="cuda", generator=g).to(dtype)
w_in = (torch.randn(H, I, device="cuda", generator=g) * 0.1).to(dtype)
w_hh = (torch.randn(H, H, device="cuda", generator=g) * 0.1).to(dtype)
out = torch.empty(T, B, H, device="cuda")
IP = max(16, triton.next_power_of_2(I))
k[(triton.cdiv(B, BB),)](x, w_in, w_hh, out, T, B, I=I, IP=IP, H=H, HP=128, BB=BB, CARRY=carry, num_warps=warps)
torch.cuda.synchronize()
h = torch.zeros(B, H, dtype=torch.float64, device="cuda")
ref = []
for s in range(T):
    h = torch.tanh(x[s].double() @ w_in.double().t() + h.to(dtype).double() @ w_hh.double().t())
    ref.append(h)
ref = torch.stack(ref)
print("max abs error", (out.double() - ref).abs().max().item(), flush=True)
'''
# (Triton's JIT reads a kernel's source from its file: the variant script is written to one.)
script = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
script.write(CODE)
script.close()
for dt, inputs, warps, carry in [("bf16", 100, 4, "0"), ("bf16", 100, 4, "1"), ("bf16", 16, 4, "0"),
                                 ("bf16", 100, 8, "0"), ("fp16", 100, 4, "0"), ("bf16", 128, 4, "0")]:
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
    p = subprocess.run([sys.executable, script.name, dt, str(inputs), str(warps), carry], capture_output=True,
                       text=True, env=env, timeout=120)
    lines = (p.stdout if p.returncode == 0 else p.stderr).strip().splitlines() or ["?"]
    print(dt, "I", inputs, "warps", warps, "carry", carry, "rc", p.returncode, lines[-1][:140], flush=True)
