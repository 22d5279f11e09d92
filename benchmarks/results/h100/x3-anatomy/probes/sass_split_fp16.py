# The 3xFP16 forward kernels whose SASS sass-ca0ff2f.txt compares between cc9219b and ca0ff2f (PYTHONPATH=src python3 THIS OUT_DIR).
import sys, torch
from pathlib import Path
from rnnbench.ops.aot import compile_kernel, sass
from rnnbench.ops.plans import choose_plan
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
for cell, g in (("rnn", 1), ("lstm", 4), ("gru", 3)):
    for b, h in ((20, 500), (128, 1024), (32, 512)):
        p = choose_plan(b, h, g, torch.float32, torch.device("cuda"), multiprocessors=132, precision="tf32x3")
        for save in (False, True):
            for lengths in (False, True):
                k = compile_kernel(cell, "forward", torch.float32, h, p, "tf32x3", save=save, lengths=lengths)
                (out / f"{cell}-B{b}-H{h}-save{int(save)}-len{int(lengths)}.sass").write_text(sass(k))
print("ok")
