"""Probe: does cuDNN's persistent fp16 LSTM slow the kernels that run after it in the same process?

    PYTHONPATH=src python3 THIS OUT_DIR

Why: in the engine's seed runs our fp16 forward at FlashRNN's shape (batch 16, 1024 steps, hidden
768) took 0.10-0.12 ms longer than our bf16 one (graphed 0.05-0.07), while alone, in a process of
its own (flash_dtypes.py), the two took the same time; the lanes of a case run in turns, and only
in fp16 does torch.nn's turn run cuDNN's persistent kernel (``ampere_lstm_tile16``).

Our no-grad fp16 and bf16 forwards timed as the engine times them (events, synchronised; median
of 30 after 5 warm-up calls) fresh, then after torch.nn's fp16 LSTM ran 20 times, after its bf16
LSTM ran 5 times, after fp16 again; each time the device's persisting-L2 limit
(cudaDeviceGetLimit(cudaLimitPersistingL2CacheSize)) and the current stream's access-policy window
(cudaStreamGetAttribute) read through the CUDA runtime. Writes OUT_DIR/after_cudnn.txt."""
import ctypes
import glob
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, "src")
import rnnbench.nn as ours  # noqa: E402

OUT = Path(sys.argv[1])
OUT.mkdir(parents=True, exist_ok=True)
T, B, H = 1024, 16, 768
lines = []


def say(text):
    lines.append(text)
    print(text, flush=True)


def cudart():
    base = os.path.dirname(torch.__file__)
    for pattern in (base + "/../nvidia/cuda_runtime/lib/libcudart.so*", base + "/../nvidia/cu*/lib/libcudart.so*",
                    base + "/lib/libcudart*.so*", "/usr/local/cuda/lib64/libcudart.so*"):
        for path in sorted(glob.glob(pattern)):
            try:
                return ctypes.CDLL(path), path
            except OSError:
                continue
    return None, None


RT, RT_PATH = cudart()


class Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class Value(ctypes.Union):
    _fields_ = [("window", Window), ("pad", ctypes.c_char * 64)]


def l2_state():
    if RT is None:
        return "no libcudart found"
    limit = ctypes.c_size_t(0)
    rc1 = RT.cudaDeviceGetLimit(ctypes.byref(limit), 0x06)  # cudaLimitPersistingL2CacheSize
    value = Value()
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rc2 = RT.cudaStreamGetAttribute(stream, 1, ctypes.byref(value))  # cudaStreamAttributeAccessPolicyWindow
    w = value.window
    return (f"persisting L2 limit {limit.value} (rc {rc1}); stream window base {w.base_ptr} bytes {w.num_bytes} "
            f"hitRatio {w.hitRatio:.2f} hitProp {w.hitProp} missProp {w.missProp} (rc {rc2})")


def inputs(dtype):
    x = torch.randn(T, B, H, device="cuda", dtype=dtype)
    return x, tuple(torch.randn(1, B, H, device="cuda", dtype=dtype) for _ in range(2))


def timed(m, x, hx, calls=30):
    out = []
    with torch.no_grad():
        for _ in range(5):
            m(x, hx)
        for _ in range(calls):
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            m(x, hx)
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e))
    return statistics.median(out)


def run(m, x, hx, calls):
    with torch.no_grad():
        for _ in range(calls):
            m(x, hx)
    torch.cuda.synchronize()


say(f"libcudart: {RT_PATH}")
torch.manual_seed(0)
mods = {d: ours.LSTM(H, H, backend="triton").to("cuda", d) for d in (torch.float16, torch.bfloat16)}
cudnn = {d: torch.nn.LSTM(H, H).to("cuda", d) for d in (torch.float16, torch.bfloat16)}
data = {d: inputs(d) for d in mods}


def ours_now(label):
    say(f"{label}: ours fp16 {timed(mods[torch.float16], *data[torch.float16]):.4f} ms, "
        f"bf16 {timed(mods[torch.bfloat16], *data[torch.bfloat16]):.4f} ms | {l2_state()}")


say(f"start | {l2_state()}")
ours_now("fresh")
ours_now("fresh again")
run(cudnn[torch.float16], *data[torch.float16], 20)
say(f"after torch.nn fp16 x20 | {l2_state()}")
ours_now("after torch.nn fp16")
ours_now("after torch.nn fp16, again")
run(cudnn[torch.bfloat16], *data[torch.bfloat16], 5)
ours_now("after torch.nn bf16")
for k in range(3):
    run(cudnn[torch.float16], *data[torch.float16], 3)
    ours_now(f"after torch.nn fp16 x3 ({k})")
(OUT / "after_cudnn.txt").write_text("\n".join(lines) + "\n")
