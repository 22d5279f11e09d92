"""Outputs of the gated FMA forwards (rnnbench.nn, backend triton, no_grad and training) saved for a bitwise comparison of two trees."""
import sys, torch, itertools, zlib
import rnnbench.nn as rnn
out = {}
torch.backends.cuda.matmul.allow_tf32 = True
for cell, dtype, hidden, batch, h0, lengths in itertools.product(("LSTM", "GRU"), ("tf32", "bf16"), (37, 100, 128), (3, 20), (False, True), (False, True)):
    if lengths and (h0 or batch != 20):
        continue
    g = torch.Generator().manual_seed(zlib.crc32(repr((cell, dtype, hidden, batch)).encode()))
    dt = {"tf32": torch.float32, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    m = getattr(rnn, cell)(hidden, hidden, backend="triton")
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    m = m.to("cuda", dt)
    x = (torch.randn(9, batch, hidden, generator=g)).to("cuda", dt)
    hx = None
    if h0:
        h = torch.randn(1, batch, hidden, generator=g).to("cuda", dt)
        hx = (h, torch.randn(1, batch, hidden, generator=g).to("cuda", dt)) if cell == "LSTM" else h
    kw = {"lengths": torch.randint(0, 10, (batch,), generator=g)} if lengths else {}
    key = (cell, dtype, hidden, batch, h0, lengths)
    with torch.no_grad():
        y, hn = m(x, hx, **kw)
        y2, hn2 = m(x, hx, **kw)  # (the second call: a replay where one is taken)
    flat = lambda y, hn: [y, *(hn if isinstance(hn, tuple) else (hn,))]
    out[key] = [t.float().cpu() for t in flat(y, hn) + flat(y2, hn2)]
    xg = x.clone().requires_grad_(True)
    y, hn = m(xg, hx, **kw)
    (y.float().square().sum() + sum(t.float().sum() for t in flat(y, hn)[1:])).backward()
    out[key + ("train",)] = [t.float().cpu() for t in flat(y.detach(), tuple(t.detach() for t in flat(y, hn)[1:])) + [xg.grad] + [p.grad for p in m.parameters()]]
torch.save(out, sys.argv[1])
print(len(out), "cases saved")
