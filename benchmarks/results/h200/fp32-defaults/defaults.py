"""Which products torch.nn's LSTM and ours run in float32 under torch's default switches, and their times.

torch.nn's recurrent layers on cuDNN follow torch.backends.cudnn.rnn.fp32_precision (torch >= 2.9; the
legacy switch torch.backends.cudnn.allow_tf32 sets it), ours torch.backends.cuda.matmul.allow_tf32.
Here: nothing set (torch's defaults), then each switch set explicitly in a context, the outputs
compared bit for bit to tell which products the default ran, and each form timed (CUDA events,
median of 20 calls after 5, forward only, no_grad).
"""
import json
import sys

import torch

import rnnbench.nn as rnn
from rnnbench.ops import plans

torch.manual_seed(0)
dev = torch.device("cuda")
g = torch._C._get_fp32_precision_getter
print("torch", torch.__version__, "switches by default: cuda/rnn", g("cuda", "rnn"), "cuda/matmul", g("cuda", "matmul"),
      "cublas allow_tf32", torch._C._get_cublas_allow_tf32(), "cudnn allow_tf32", torch.backends.cudnn.allow_tf32)


def timed(f):
    for _ in range(5):
        f()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[10] * 1e3  # µs


def rnn_switch(value):
    """Context: cuDNN's RNN switch set to value ('tf32' or 'ieee') and cuBLAS' to the same."""
    class C:
        def __enter__(self):
            self.old = (g("cuda", "rnn"), torch._C._get_cublas_allow_tf32())
            torch._C._set_fp32_precision_setter("cuda", "rnn", value)
            torch._C._set_cublas_allow_tf32(value == "tf32")
        def __exit__(self, *a):
            torch._C._set_fp32_precision_setter("cuda", "rnn", self.old[0])
            torch._C._set_cublas_allow_tf32(self.old[1])
    return C()


rows = []
for name, (T, B, I, H) in {"glample": (30, 20, 100, 100), "theano-h512": (100, 32, 512, 512),
                           "zaremba-layer": (35, 20, 1500, 1500), "kawakami": (128, 128, 1024, 1024)}.items():
    ref = torch.nn.LSTM(I, H).to(dev)
    ours = rnn.LSTM(I, H).to(dev)
    ours.load_state_dict(ref.state_dict())
    x = torch.randn(T, B, I, device=dev)
    with torch.no_grad():
        out = {}
        for form in ("default", "tf32", "ieee"):
            for label, m in (("torch-nn", ref), ("triton", ours)):
                if form == "default":
                    y = m(x)[0]; us = timed(lambda: m(x))
                    prec = plans.dot_precision(torch.float32) if label == "triton" else None
                else:
                    with rnn_switch(form):
                        y = m(x)[0]; us = timed(lambda: m(x))
                        prec = plans.dot_precision(torch.float32) if label == "triton" else None
                out[label, form] = y.clone()
                rows.append({"case": name, "lane": label, "switches": form, "us_per_forward": round(us, 1),
                             "our_precision": prec})
        for label in ("torch-nn", "triton"):
            same = {form: bool(torch.equal(out[label, "default"], out[label, form])) for form in ("tf32", "ieee")}
            rows.append({"case": name, "lane": label, "default_bits_equal": same})
for r in rows:
    print(json.dumps(r))
