import sys, weakref, torch
sys.path.insert(0, "tests/ops")
from rnnbench import nn as rnn
from rnnbench.ops import replay as replays, launch
from rnnbench.precision import matmul_mode

def run(cell, reuse, pdl, hold):
    replays.REUSE = reuse
    launch.PDL = pdl
    torch.manual_seed(0)
    cls = {"lstm": rnn.LSTM, "rnn_tanh": rnn.RNN}[cell]
    module = cls(100, 100, backend="triton").cuda()
    def call(seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(7, 20, 100, generator=gen, device="cuda")
        h0 = torch.randn(1, 20, 100, generator=gen, device="cuda") * 0.5
        hx = (h0, torch.randn_like(h0) * 0.5) if cell == "lstm" else h0
        with torch.no_grad():
            out, fin = module(x, hx)
        return [out, *(fin if isinstance(fin, tuple) else (fin,))]
    call(0)
    held = call(1) if hold else None
    returned = []
    for seed in range(2, 9):
        got = call(seed)
        back = [any(r() is t for r in returned) for t in got]
        returned += [weakref.ref(t) for t in got]
        replays.ENABLED = False
        want = call(seed)
        replays.ENABLED = True
        eq = [torch.equal(g, w) for g, w in zip(got, want)]
        diff = [float((g - w).abs().max()) for g, w in zip(got, want)]
        print(f"  {cell} reuse={reuse} pdl={pdl} hold={hold} seed {seed}: back {back} equal {eq} maxdiff {['%.2g' % d for d in diff]}", flush=True)
        del got, want
    launch.PDL = True

for cell in ("lstm", "rnn_tanh"):
    for reuse, pdl, hold in ((True, True, True), (False, True, True), (True, False, True), (True, True, False)):
        run(cell, reuse, pdl, hold)
