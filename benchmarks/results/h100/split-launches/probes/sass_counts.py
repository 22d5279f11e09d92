"""Resource use and global memory instructions of strict fp32's split kernels as the tree on
PYTHONPATH compiles them for sm_90 (no GPU needed; Triton's own ptxas and cuobjdump): registers,
spills, wgmma, and the counts of each LDG/STG/LDGSTS form in the SASS, one line a kernel.

    PYTHONPATH=TRITON_SITE:TREE/src python3 sass_counts.py"""
import re
from collections import Counter

import triton

from rnnbench.ops import aot

print(f"triton {triton.__version__}")
for label, compiled in aot.compile_split_products().items():
    usage = aot.resource_usage(compiled)
    memory = Counter(re.findall(r"\b(LDG\.E[.\w]*|STG\.E[.\w]*|LDGSTS[.\w]*)", aot.sass(compiled)))
    print(label, {k: usage.get(k) for k in ("reg", "stack", "hgmma")}, dict(sorted(memory.items())))
