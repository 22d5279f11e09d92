"""The TF32 layer-normalized LSTM's training step, B32 H64 T30, per-tensor errors against float64,
with the weights and inputs as drawn and with them rounded to TF32 first (10-bit mantissas, to
nearest): if our products' TF32 operands are truncated where cuBLAS's are rounded, the static
operands rounded first should bring ours to the loop's error."""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks"), str(ROOT / "ab")]
import warnings
import torch
from diag179 import errors
from rnnbench import nn as rnn
from rnnbench.precision import matmul_mode
warnings.simplefilter("ignore")

def tf32(t):  # round to nearest with 10 mantissa bits (ties away), as cvt.rna.tf32.f32
    bits = t.detach().float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32).to(t.dtype)

def run(tag, rounded):
    torch.manual_seed(0)
    normed = rnn.LSTM(64, 64, backend="torch", layer_norm=True).to("cuda")
    if rounded:
        with torch.no_grad():
            for p in normed.parameters():
                p.copy_(tf32(p))
    forms = {"loop-ln": normed, "triton-ln": rnn.LSTM(64, 64, backend="triton", layer_norm=True),
             "triton": rnn.LSTM(64, 64, backend="triton"), "cudnn": rnn.LSTM(64, 64, backend="torch")}
    for name, m in forms.items():
        if name != "loop-ln":
            m.to("cuda").load_state_dict(normed.state_dict(), strict=False)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(30, 32, 64, generator=gen, device="cuda")
    hx = [torch.randn(1, 32, 64, generator=gen, device="cuda") * 0.5 for _ in range(2)]
    if rounded:
        x, hx = tf32(x), [tf32(h) for h in hx]
    x = x.requires_grad_()
    hx = tuple(h.requires_grad_() for h in hx)
    with matmul_mode("tf32"):
        errs = {f: errors(m, x, hx, f.endswith("-ln")) for f, m in forms.items()}
    print(f"\n## {tag}: " + "  ".join(f"{f} max {max(e.values()):.2e}" for f, e in errs.items()))
    for n in errs["loop-ln"]:
        print(f"{n:24s}" + "".join(f"{errs[f].get(n, float('nan')):11.2e}" for f in errs))

run("as drawn", False)
run("weights and inputs rounded to TF32", True)
