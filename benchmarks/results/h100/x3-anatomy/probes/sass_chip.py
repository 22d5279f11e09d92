# The RNN forward kernels whose SASS sass-ca0ff2f.txt compares between trees (run from each tree: PYTHONPATH=src python3 THIS OUT_DIR); at 20 x 500 asks for split_fp16=False where the tree knows it.
import sys, torch
from pathlib import Path
from rnnbench.ops.aot import compile_kernel, sass
from rnnbench.ops.plans import choose_plan
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
for b, h, ov in ((512, 100, {}), (20, 100, dict(fma=False)), (3, 37, dict(fma=False)), (20, 500, dict(split_fp16=False)) if "split_fp16" in open(__import__("rnnbench.ops.plans", fromlist=["x"]).__file__).read() else (20, 500, {})):
    p = choose_plan(b, h, 1, torch.float32, torch.device("cuda"), multiprocessors=132, precision="tf32x3", **ov)
    for save in (False, True):
        for relu in (False,):
            k = compile_kernel("rnn", "forward", torch.float32, h, p, "tf32x3", save=save)
            (out / f"rnn-B{b}-H{h}-save{int(save)}.sass").write_text(sass(k))
print("ok")
