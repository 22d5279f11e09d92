"""The RNN's FMA forward as the tree on PYTHONPATH compiles it for sm_90 (no GPU needed; Triton's own
ptxas and cuobjdump): registers, stack (spills) and shared memory of the producing variant and the
plain one, and the plain variant's opcodes counted (an md5 of the sorted counts, so two trees'
lines compare; register numbers and addresses left out). Hidden 37, 100 and 128; strict fp32
(3xTF32 tiles), TF32 and bf16; saving or not; lengths or not (the plain variant).

    PYTHONPATH=TRITON_SITE:TREE/src python3 sass.py [plain]

``plain``: only the plain variant's lines (for a tree without ``Plan.produce``)."""
import dataclasses
import hashlib
import re
import sys
from collections import Counter

import torch
import triton

from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan

plain_only = sys.argv[1:] == ["plain"]
print(f"triton {triton.__version__}")
for hidden in (37, 100, 128):
    for dtype, precision in ((torch.float32, "tf32x3"), (torch.float32, "tf32"), (torch.bfloat16, "ieee")):
        plan = choose_plan(20, hidden, 1, dtype, torch.device("cuda"), precision=precision, direction="forward",
                           multiprocessors=132, fma=True)
        for save in (False, True):
            for lengths in (False, True):
                plain = dataclasses.replace(plan, produce=False) if hasattr(plan, "produce") else plan
                compiled = aot.compile_kernel("rnn", "forward", dtype, hidden, plain, precision=precision, save=save,
                                              lengths=lengths)
                ops = Counter(re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", aot.sass(compiled)))
                usage = aot.resource_usage(compiled)
                print(f"plain   H{hidden} {precision} {dtype} save={save} lengths={lengths}: "
                      f"reg {usage.get('reg')} stack {usage.get('stack')} instructions {sum(ops.values())} "
                      f"opcodes {hashlib.md5(str(sorted(ops.items())).encode()).hexdigest()[:10]}")
                if plain_only or lengths:
                    continue
                compiled = aot.compile_kernel("rnn", "forward", dtype, hidden, dataclasses.replace(plan, produce=True),
                                              precision=precision, save=save)
                usage = aot.resource_usage(compiled)
                print(f"produce H{hidden} {precision} {dtype} save={save}: reg {usage.get('reg')} "
                      f"stack {usage.get('stack')} shared {compiled.metadata.shared}")
