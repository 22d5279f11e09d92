# The sliced backwards compiled for sm_90 (Triton 3.6, no GPU) before and after their common lines
# became helpers (_slice_planes, _whole_tile in ops/lstm/pieces.py): a hash of each variant's PTX
# without line info, debug sections, label names or whitespace. From the repository root, at each commit:
#     PYTHONPATH=src python benchmarks/results/h200/pieces/factored_backward_ptx.py
import hashlib, re, torch
from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan
for cell, gates in (("lstm", 4), ("gru", 3)):
    for gate_split in (False, True):
        for lengths in (False, True):
            plan = choose_plan(1024, 1536 if gate_split and cell == "gru" else 2048, gates, torch.bfloat16,
                               torch.device("cuda"), multiprocessors=132, direction="backward", pieces=4,
                               gate_split=gate_split, split_k=False)
            hidden = 1536 if gate_split and cell == "gru" else 2048
            c = aot.compile_kernel(cell, "backward", torch.bfloat16, hidden, plan, "ieee", lengths=lengths)
            ptx = re.sub(r"^\s*\.loc.*$|^\s*\.file.*$", "", c.asm["ptx"], flags=re.M)
            ptx = re.sub(r"\.section\s+\.debug.*", "", ptx, flags=re.S)
            ptx = re.sub(r"\$L__tmp[0-9]+:?", "", ptx)
            print(cell, "gate_split" if gate_split else "transpose", "lengths" if lengths else "same-lengths",
                  hashlib.sha1("".join(ptx.split()).encode()).hexdigest()[:12], flush=True)
