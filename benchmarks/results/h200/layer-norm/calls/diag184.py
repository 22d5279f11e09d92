"""The TF32 layer-normalized LSTM's training step, B32 H64 T30, over 8 draws of weights and inputs:
the largest relative error against float64 of any returned tensor, layer norm on the loop and on our
kernels (and without it on our kernels and cuDNN), per draw; and the same in bf16. One draw (c179,
c183) cannot tell a systematic difference from the draw's own luck in a function this ill-conditioned."""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks"), str(ROOT / "ab")]
import statistics
import warnings
import torch
from diag179 import errors
from rnnbench import nn as rnn
from rnnbench.precision import matmul_mode
warnings.simplefilter("ignore")

for mode, dtype in (("tf32", torch.float32), ("bf16", torch.bfloat16)):
    table = {}
    for seed in range(8):
        torch.manual_seed(seed)
        normed = rnn.LSTM(64, 64, backend="torch", layer_norm=True).to("cuda", dtype)
        forms = {"loop-ln": normed, "triton-ln": rnn.LSTM(64, 64, backend="triton", layer_norm=True),
                 "triton": rnn.LSTM(64, 64, backend="triton"), "cudnn": rnn.LSTM(64, 64, backend="torch")}
        for name, m in forms.items():
            if name != "loop-ln":
                m.to("cuda", dtype).load_state_dict(normed.state_dict(), strict=False)
        gen = torch.Generator(device="cuda").manual_seed(100 + seed)
        x = torch.randn(30, 32, 64, generator=gen, device="cuda").to(dtype).requires_grad_()
        hx = tuple((torch.randn(1, 32, 64, generator=gen, device="cuda") * 0.5).to(dtype).requires_grad_()
                   for _ in range(2))
        with matmul_mode(mode):
            for f, m in forms.items():
                table.setdefault(f, []).append(max(errors(m, x, hx, f.endswith("-ln")).values()))
    print(f"\n## {mode}, B32 H64 T30, 8 draws: largest relative error of any tensor")
    for f, errs in table.items():
        print(f"{f:10s} median {statistics.median(errs):.2e}  " + " ".join(f"{e:.1e}" for e in errs))
    wins = sum(a < b for a, b in zip(table["triton-ln"], table["loop-ln"]))
    print(f"triton-ln closer than loop-ln in {wins} of 8 draws")
