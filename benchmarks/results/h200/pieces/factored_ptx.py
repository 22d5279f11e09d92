# The sliced forwards compiled for sm_90 (Triton 3.6, no GPU) before and after their common lines
# became helpers in ops/lstm/pieces.py: a hash of each variant's PTX without line info, debug
# sections, label names or whitespace. From the repository root, at each commit:
#     PYTHONPATH=src python benchmarks/results/h200/pieces/factored_ptx.py
import dataclasses, hashlib, re, torch
from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan
for cell in ("lstm", "gru"):
    for save in (False, True):
        for lengths in (False, True):
            plan = choose_plan(1024, 2048, 4 if cell == "lstm" else 3, torch.bfloat16, torch.device("cuda"), multiprocessors=132, precision="ieee", direction="forward")
            plan = dataclasses.replace(plan, pieces=4)
            c = aot.compile_kernel(cell, "forward", torch.bfloat16, 2048, plan, "ieee", save=save, lengths=lengths)
            ptx = re.sub(r"^\s*\.loc.*$|^\s*\.file.*$", "", c.asm["ptx"], flags=re.M)
            ptx = re.sub(r"\.section\s+\.debug.*", "", ptx, flags=re.S); ptx = re.sub(r"\$L__tmp[0-9]+:?|^\s*\n", "", ptx, flags=re.M)
            print(cell, save, lengths, hashlib.sha1("".join(ptx.split()).encode()).hexdigest()[:12], len(ptx), flush=True)
