"""The package's Gluon LSTM forward (src/rnnbench/ops/lstm/gluon.py; the runs in ../stdout-logs.txt were of its state at b62d65e, probes/gluon_lstm_forward.py there) under source edits, each timed
against the probe kernel (gluon_step_parts.py) at FlashRNN's shape, fp16, kernel alone, graph
replays (µs per step, twice each). Run from the repository root on a GPU:
    PYTHONPATH=src python3 benchmarks/results/h100/gluon-step/probes/variants.py
The edits below are the last batch run; the others are in ../stdout-logs.txt."""
import sys, torch, importlib.util
from pathlib import Path
HERE = Path(__file__).resolve().parent
sys.path.insert(0, "src"); sys.path.insert(0, str(HERE))
from gluon_step_parts import _per_step_us as per_step_us
import gluon_step_parts as P
src = Path("src/rnnbench/ops/lstm/gluon.py").read_text()
variants = {
 "cur": [],
 "V1_int32": [('B.to(gl.int64) * H', 'B * H'), ('B.to(gl.int64) * (4 * H)', 'B * (4 * H)')],
 "V3_no_hn": [('            if t + 1 == T:  # (h is not carried past the loop: registers)\n                gl.store(h_n_ptr + h_corner + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)\n', '')],
 "V4_live": [('live = hb < gl.where(t > 0, B - row0, 0)', 'live = hb < B - row0')],
 "V5_all": [('B.to(gl.int64) * H', 'B * H'), ('B.to(gl.int64) * (4 * H)', 'B * (4 * H)'), ('            if t + 1 == T:  # (h is not carried past the loop: registers)\n                gl.store(h_n_ptr + h_corner + hid, h.to(h_n_ptr.dtype.element_ty), mask=mask)\n', ''), ('live = hb < gl.where(t > 0, B - row0, 0)', 'live = hb < B - row0')],
}
dev = torch.device("cuda"); B, H = 16, 768; dtype = torch.float16
w = (torch.randn(4 * H, H, device=dev) * H ** -0.5).to(dtype)
x_proj = torch.randn(1024, B, 4 * H, device=dev).to(dtype)
bias32 = torch.zeros(4 * H, device=dev); b16 = torch.zeros(4 * H, device=dev, dtype=dtype)
def make(K, has_bias, bias):
    def jit(T):
        h_buf = torch.empty(T + 1, B, H, device=dev, dtype=dtype); h_n = torch.empty(1, B, H, device=dev, dtype=dtype)
        c_n = torch.empty_like(h_n); cnt = torch.zeros(1, device=dev, dtype=torch.int32)
        K[(H // 16, 1)](x_proj[:T], w, bias, bias, h_buf, h_n, h_buf, h_n, c_n, h_n, h_n, cnt, T, B, H=H, HAS_BIAS=has_bias, HAS_H0=False, HAS_C0=False, SAVE=False, BLOCK_B=16, PIECE=256, PIECES=3, num_warps=4)
    return jit
runs = {"probe": lambda T: P.gluon_forward(x_proj[:T], w, bias32)}
bias_f32 = torch.zeros(4 * H, device=dev)
for name, subs in variants.items():
    s = src
    for a, b in subs:
        assert a in s, (name, a[:50]); s = s.replace(a, b)
    path = f"/tmp/glvar_{name}.py"; open(path, "w").write(s)
    spec = importlib.util.spec_from_file_location(f"glvar_{name}", path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    runs[name + "_bias"] = make(m.lstm_forward_gluon_kernel, True, b16)
    if name in ("cur", "V5_all"):
        runs[name] = make(m.lstm_forward_gluon_kernel, False, b16)
for name, fn in list(runs.items()) * 2:
    print(name, round(per_step_us(fn, 512)[0], 3), flush=True)
