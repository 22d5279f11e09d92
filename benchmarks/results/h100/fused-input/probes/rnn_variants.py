"""Record (ran at 49d17db, whose plans had ``fused_input``): the on-chip RNN forward fused, under
variants of input width, batch, warps, dtype and weight path, each in its own process. Not
maintained code: the API it calls was reverted."""
import json
import os
import subprocess
import sys

CODE = r'''
import sys, json, torch
from rnnbench.ops import recurrence as R
dt, fused, I, B, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dt]
torch.backends.cuda.matmul.allow_tf32 = True
T, H = 30, 100
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(T, B, I, device="cuda", dtype=dtype, generator=g)
w_ih = (torch.randn(H, I, device="cuda", generator=g) * 0.1).to(dtype)
w_hh = (torch.randn(H, H, device="cuda", generator=g) * 0.1).to(dtype)
b = torch.zeros(H, device="cuda", dtype=dtype)
with R.plan_override(fused_input=fused, **extra):
    launch = R.layer_launch("rnn_tanh", B, H, dtype, x.device, I)
    out, hn, cn = R.run_layer("rnn_tanh", x, None, None, w_ih, w_hh, b, b, launch)
    torch.cuda.synchronize()
print("ok", launch.forward.h_on_chip, launch.forward.num_warps, flush=True)
'''
for dt, fused, I, B, extra in [("bf16", 1, 100, 20, {}), ("bf16", 2, 100, 20, {}), ("bf16", 1, 128, 20, {}),
                               ("bf16", 1, 64, 20, {}), ("bf16", 1, 16, 20, {}), ("bf16", 1, 100, 16, {}),
                               ("bf16", 1, 100, 20, {"num_warps": 8}), ("fp16", 1, 100, 20, {}),
                               ("tf32", 1, 100, 20, {}), ("tf32", 2, 100, 20, {}), ("bf16", 0, 100, 20, {})]:
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
    p = subprocess.run([sys.executable, "-c", CODE, dt, str(fused), str(I), str(B), json.dumps(extra)],
                       capture_output=True, text=True, env=env, timeout=120)
    lines = (p.stdout if p.returncode == 0 else p.stderr).strip().splitlines() or ["?"]
    print(dt, "fused", fused, "I", I, "B", B, extra, "rc", p.returncode, lines[-1][:120], flush=True)
