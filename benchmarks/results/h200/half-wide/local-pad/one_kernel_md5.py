"""The SASS md5 of one kernel (the LSTM's TF32 backward, batch 32, hidden 512) compiled for sm_90 as
rnnbench.ops.aot compiles it: PYTHONPATH=src python one_kernel_md5.py  (Triton 3.6, no GPU needed)."""
import sys, torch, hashlib
from rnnbench.ops.aot import compile_kernel, sass
from rnnbench.ops.plans import choose_plan, backward_precision
p = choose_plan(32, 512, 4, torch.float32, torch.device("cuda"), multiprocessors=132, precision="tf32", direction="backward")
k = compile_kernel("lstm", "backward", torch.float32, 512, p, backward_precision("tf32", 4))
print(hashlib.md5(sass(k).encode()).hexdigest())
