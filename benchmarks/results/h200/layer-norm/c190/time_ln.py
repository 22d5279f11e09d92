"""One version's layer-normalized step times (ms, median of 5 rounds of 20 calls, CUDA events), for
an A/B of two source trees run in alternate processes: python3 ab/time_ln.py LABEL (PYTHONPATH picks the tree)."""
import json, sys
import torch
from rnnbench import nn as rnn

torch.backends.cuda.matmul.allow_tf32 = True
DT = {"bf16": torch.bfloat16, "tf32": torch.float32}
SHAPES = [("lstm", 32, 650, 35, "bf16", "train"), ("lstm", 32, 650, 35, "tf32", "train"),
          ("lstm", 20, 2048, 35, "bf16", "train"), ("lstm", 20, 2048, 35, "bf16", "eval"),
          ("gru", 32, 1024, 35, "bf16", "train")]
for cell, B, H, T, dt, mode in SHAPES:
    torch.manual_seed(0)
    m = {"lstm": rnn.LSTM, "gru": rnn.GRU}[cell](H, H, backend="triton", layer_norm=True).to("cuda", DT[dt])
    x = torch.randn(T, B, H, device="cuda", dtype=DT[dt], requires_grad=mode == "train")

    def step():
        if mode == "train":
            out, _ = m(x)
            torch.autograd.grad(out.float().square().mean(), [x, *m.parameters()])
        else:
            with torch.no_grad():
                m(x)

    for _ in range(5):
        step()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(); a.record()
        for _ in range(20):
            step()
        b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 20)
    print(json.dumps(dict(label=sys.argv[1], cell=cell, batch_size=B, hidden_size=H, seq_len=T, dtype=dt, mode=mode,
                          ms=sorted(times)[2], rounds_ms=times)), flush=True)
