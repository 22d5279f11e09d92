"""Record (ran at 2c7f6f7, whose plans had ``fused_input``): which fused forwards fault on CUDA,
each configuration in its own process. Not maintained code: the API it calls was reverted."""
import os
import subprocess
import sys

CODE = r'''
import sys, torch
from rnnbench.ops import recurrence as R
cell, dt, fused, mode, chip = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dt]
torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
G = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[cell]
T, B, I, H = 30, 20, 100, 100
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, I, device="cuda", dtype=dtype, generator=g)
w_ih = (torch.randn(G * H, I, device="cuda", generator=g) * 0.1).to(dtype)
w_hh = (torch.randn(G * H, H, device="cuda", generator=g) * 0.1).to(dtype)
b = torch.zeros(G * H, device="cuda", dtype=dtype)
over = dict(fused_input=fused) if chip else dict(fused_input=fused, h_on_chip=False)
with R.plan_override(**over):
    launch = R.layer_launch(cell, B, H, dtype, x.device, I)
    out, hn, cn = R.run_layer(cell, x, None, None, w_ih, w_hh, b, b, launch)
    torch.cuda.synchronize()
print("ok", out.float().abs().max().item(), flush=True)
'''
for cell in ("rnn_tanh", "lstm", "gru"):
    for dt in ("bf16", "fp16", "tf32"):
        for fused in (1, 0):
            for chip in ("1", "0"):
                env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
                p = subprocess.run([sys.executable, "-c", CODE, cell, dt, str(fused), "forward", chip],
                                   capture_output=True, text=True, env=env, timeout=120)
                lines = (p.stdout if p.returncode == 0 else p.stderr).strip().splitlines() or ["?"]
                print(cell, dt, "fused", fused, "chip", chip, "forward", "rc", p.returncode, lines[-1][:150], flush=True)
