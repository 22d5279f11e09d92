"""EXPERIMENT (run with mma-experiment.patch applied; not part of the package): where the 3xTF32 streamed forward's step goes. Prints the environment record, then one line per shape."""
import sys, json
sys.path.insert(0, "src"); sys.path.insert(0, "benchmarks")
import torch
from triton_dev import _graph_ms, _kernel_alone
from rnnbench.ops.recurrence import NUM_GATES, plan, plan_override
from rnnbench.precision import matmul_mode
from rnnbench.env import environment
dev = torch.device("cuda")
print(json.dumps({"record": "env", **environment()}), flush=True)
for cell, b, h in [("lstm", 128, 1024), ("gru", 128, 1024), ("lstm", 20, 500), ("lstm", 128, 512), ("gru", 32, 512)]:
    with matmul_mode("fp32"):
        p = plan(cell, b, h, torch.float32, dev, "tf32x3")
        fields = {k: v for k, v in p.__dict__.items()}
        g = NUM_GATES[cell]; t = 30
        gen = torch.Generator(device="cuda").manual_seed(0)
        w = torch.randn(g*h, h, device=dev, generator=gen) * h**-0.5
        bias = torch.randn(g*h, device=dev, generator=gen) * 0.1
        xp = torch.randn(2*t, b, g*h, device=dev, generator=gen)
        res = {}
        with plan_override(**fields):
            for prec in ("tf32x3", "tf32", "fake3", "bsplit"):
                try:
                    k1 = _graph_ms(_kernel_alone(cell, b, t, h, torch.float32, prec, xp, w, bias, bias))
                    k2 = _graph_ms(_kernel_alone(cell, b, 2*t, h, torch.float32, prec, xp, w, bias, bias))
                    res[prec] = round(1e3*(k2-k1)/t, 2)
                except Exception as e:
                    res[prec] = f"{type(e).__name__}: {str(e)[:120]}"
        print(cell, b, h, f"bb{p.block_b} bh{p.block_h} res{int(p.w_resident)} bk{p.block_k} w{p.num_warps}", json.dumps(res), flush=True)
