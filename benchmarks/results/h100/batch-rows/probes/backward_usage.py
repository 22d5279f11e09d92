"""The backward plans the batch-block rule reaches, compiled for sm_90 without a GPU: registers,
spills (stack) and shared memory of the default plan (after the rule), 16 and 32 rows a program
(``rnnbench.ops.aot.variant_usage``). Run from the repository root with src/ on the path."""
import torch, triton
from rnnbench.ops.aot import variant_usage
print("triton", triton.__version__)
cases = [("rnn", 20, 500, torch.float32, "tf32x3"), ("rnn", 20, 500, torch.float32, "tf32"),
         ("rnn", 20, 500, torch.bfloat16, "ieee"), ("rnn", 128, 512, torch.bfloat16, "ieee"),
         ("lstm", 32, 1024, torch.float32, "tf32x3"), ("gru", 32, 1024, torch.float32, "tf32x3"),
         ("lstm", 32, 1024, torch.float32, "tf32"), ("gru", 32, 1024, torch.float32, "tf32"),
         ("lstm", 64, 1024, torch.float32, "tf32")]
for cell, b, h, dt, prec in cases:
    for fields in ({}, {"block_b": 16}, {"block_b": 32}):
        try:
            plan, u = variant_usage(cell, "backward", dt, b, h, prec, fields, {})
        except Exception as e:
            print(cell, b, h, dt, prec, fields, "ERR", str(e)[:80]); continue
        print(cell, b, h, str(dt)[6:], prec, fields, f"bb{plan.block_b} bh{plan.block_h} res{int(plan.w_resident)} bk{plan.block_k} w{plan.num_warps} sk{int(plan.split_k)}",
              {k: u[k] for k in ("reg", "stack", "shared")})
