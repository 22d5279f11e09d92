"""Per-tensor errors against float64 of the LSTM's training step, B32 H64: layer norm on the loop and
on our kernels, and without it on our kernels and cuDNN; TF32, bf16, strict fp32; 10 and 30 steps."""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]
import warnings
import torch
from ab import module_step
from rnnbench import nn as rnn
from rnnbench.ops.naive import naive_network
from rnnbench.precision import matmul_mode
from rnnbench.verify import relative_error
warnings.simplefilter("ignore")

def errors(module, x, hx, layer_norm):
    got = module_step(module, x, hx, True)
    params = dict(module.named_parameters())
    wide = {n: p.detach().double().requires_grad_() for n, p in params.items()}
    xw = x.detach().double().requires_grad_()
    states = [s.detach().double().requires_grad_() for s in hx]
    out, finals = naive_network("lstm", wide, xw, tuple(states), 1)
    ref = [out, *finals]
    loss = sum(t.sum() for t in ref)
    ref = [t.detach() for t in ref] + list(torch.autograd.grad(loss, [xw, *states, *wide.values()]))
    names = ["out", "h_n", "c_n", "d_x", "d_h0", "d_c0", *params]
    return {n: float(relative_error(a.double(), b)) for n, a, b in zip(names, got, ref, strict=True)}

if __name__ == "__main__":
    for steps in (10, 30):
        for mode, dtype in (("tf32", torch.float32), ("bf16", torch.bfloat16), ("fp32", torch.float32)):
            torch.manual_seed(0)
            normed = rnn.LSTM(64, 64, backend="torch", layer_norm=True).to("cuda", dtype)
            forms = {"loop-ln": normed, "triton-ln": rnn.LSTM(64, 64, backend="triton", layer_norm=True),
                     "triton": rnn.LSTM(64, 64, backend="triton"), "cudnn": rnn.LSTM(64, 64, backend="torch")}
            for name, m in forms.items():
                if name != "loop-ln":
                    m.to("cuda", dtype).load_state_dict(normed.state_dict(), strict=False)
            gen = torch.Generator(device="cuda").manual_seed(1)
            x = torch.randn(steps, 32, 64, generator=gen, device="cuda").to(dtype).requires_grad_()
            hx = tuple((torch.randn(1, 32, 64, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_() for _ in range(2))
            with matmul_mode(mode):
                errs = {f: errors(m, x, hx, f.endswith("-ln")) for f, m in forms.items()}
            names = list(errs["loop-ln"])
            print(f"\n## T{steps} {mode}: " + "  ".join(f"{f} max {max(e.values()):.2e}" for f, e in errs.items()))
            print(f"{'tensor':24s}" + "".join(f"{f:>11s}" for f in errs))
            for n in names:
                print(f"{n:24s}" + "".join(f"{errs[f].get(n, float('nan')):11.2e}" for f in errs))
