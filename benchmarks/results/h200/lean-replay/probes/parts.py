"""Where a replayed eager call's host time goes on the device's host: micro-op costs on CUDA
tensors, and cProfile of whole forward and training calls (RNN, LSTM, GRU at glample's size, TF32)."""
import cProfile, io, json, pstats, sys, threading, time, timeit, weakref
from pathlib import Path
import torch
from rnnbench import nn as rnn_nn
from rnnbench.ops import replay as rp, launch as ln
from rnnbench.precision import matmul_mode

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
x = torch.randn(30, 20, 100, device="cuda")
n = 20000
def t(f):
    return min(timeit.repeat(f, number=n, repeat=5)) / n * 1e9
wk = weakref.WeakKeyDictionary(); mod = torch.nn.Identity(); wk[mod] = 1
st = x.untyped_storage()
micro = {
    "lambda": lambda: None,
    "data_ptr": lambda: x.data_ptr(), "is_contiguous": lambda: x.is_contiguous(), "dtype": lambda: x.dtype,
    "device": lambda: x.device, "shape": lambda: x.shape, "stride": lambda: x.stride(),
    "_current_stream": ln._current_stream, "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
    "_cuda_isCurrentStreamCapturing": torch._C._cuda_isCurrentStreamCapturing,
    "cuda.is_initialized": torch.cuda.is_initialized, "_no_launch_hooks": ln._no_launch_hooks,
    "can_replay": rp.can_replay, "WeakKeyDictionary.get": lambda: wk.get(mod),
    "getrefcount": lambda: sys.getrefcount(x), "untyped_storage": lambda: x.untyped_storage(),
    "storage_use_count": lambda: torch._C._storage_Use_Count(st._cdata),
    "as_strided": lambda: x.as_strided((20, 100), (100, 1), 100),
    "is_grad_enabled": torch.is_grad_enabled, "is_autocast_enabled(cuda)": lambda: torch.is_autocast_enabled("cuda"),
    "allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32, "get_ident": threading.get_ident,
    "empty_strided": lambda: torch.empty_strided((30, 20, 100), (2000, 100, 1), device="cuda"),
}
rows = []
for name, f in micro.items():
    rows.append(dict(part=name, ns=t(f)))
    print(f"micro {name:32s} {rows[-1]['ns']:8.0f} ns", flush=True)
    torch.cuda.synchronize()

def host_us(fn, calls=600):
    s = []
    for _ in range(calls):
        torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); s.append((time.perf_counter() - t0) * 1e6)
    s.sort(); return s[len(s) // 2]

prof_text = io.StringIO()
with matmul_mode("tf32"):
    for cls in (rnn_nn.RNN, rnn_nn.LSTM, rnn_nn.GRU):
        torch.manual_seed(0)
        m = cls(100, 100).cuda()
        xx = torch.randn(30, 20, 100, device="cuda", requires_grad=True)
        h0 = torch.randn(1, 20, 100, device="cuda", requires_grad=True)
        hx = (h0, torch.randn_like(h0).requires_grad_()) if cls is rnn_nn.LSTM else h0
        params = list(m.parameters())
        leaves = [xx, *(hx if isinstance(hx, tuple) else (hx,)), *params]
        def fwd():
            with torch.no_grad():
                return m(xx, hx)
        def train():
            o, _ = m(xx, hx)
            return torch.autograd.grad(o[-1].sum(), leaves)
        def fwd_grad():
            return m(xx, hx)
        for name, fn in (("forward", fwd), ("train", train), ("forward with grad", fwd_grad)):
            for _ in range(30): fn()
            torch.cuda.synchronize()
            us = sorted(host_us(fn) for _ in range(3))[1]
            rows.append(dict(cell=m.cell, part=name, host_us=us))
            print(f"{m.cell:9s} {name:20s} host {us:7.2f} µs", flush=True)
            pr = cProfile.Profile(); pr.enable()
            for _ in range(2000): fn()
            pr.disable(); torch.cuda.synchronize()
            prof_text.write(f"\n===== {m.cell} {name}: 2000 calls =====\n")
            pstats.Stats(pr, stream=prof_text).sort_stats("tottime").print_stats(30)
(out / "parts.json").write_text(json.dumps(rows, indent=1))
(out / "profile.txt").write_text(prof_text.getvalue())
