"""Compile the FMA RNN kernels (``src/rnnbench/ops/rnn/fma.py``) for sm_90 without a GPU and print
what the docs and comments cite: registers, spill bytes, and the SASS's shuffles (``SHFL``) and
FMAs (``FFMA``), with ``W_hh``'s strides unknown (as launched) or known (given as compile-time
constants, as Triton would specialise them), and with 1, 4 or 8 chains.

    PYTHONPATH=src python benchmarks/results/h100/fma-rnn/aot/compile_fma.py      # with Triton 3.6

The counts cover the whole kernel; the time loop holds all but a few of the FFMAs."""
import re
import sys
from collections import Counter

import torch

from rnnbench.ops.aot import POINTER, _compile, resource_usage, sass
from rnnbench.ops.rnn.fma import rnn_backward_fma_kernel, rnn_forward_fma_kernel


def row(direction, hidden, chains, known):
    forward = direction == "forward"
    fn = rnn_forward_fma_kernel if forward else rnn_backward_fma_kernel
    kp = max(16, 1 << (hidden - 1).bit_length())
    c = dict(H=hidden, RELU=False, HAS_LENGTHS=False, K_PAD=kp, CHAINS=chains)
    c.update(HAS_BIAS=True, HAS_H0=True, SAVE=False, FAST_ACT=False) if forward else c.update(
        HAS_D_OUT=True, HAS_D_H_N=True)
    if known:  # W_hh's strides as the JIT would specialise them (forward (H, 1); backward swapped)
        c.update(w_stride_j=hidden, w_stride_k=1)
    compiled = _compile(fn, c, {"lengths_ptr": "*i32", "saved_ptr": "*fp32"}, POINTER[torch.float32],
                        max(1, min(4, kp // 32)), 3, 90)
    u = resource_usage(compiled)
    ops = Counter(m.group(1) for m in re.finditer(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", sass(compiled)))
    return (f"{direction:8s} hidden {hidden:3d} chains {chains} strides {'known  ' if known else 'unknown'}: "
            f"registers {u.get('reg')}, stack {u.get('stack')}, SHFL {ops.get('SHFL', 0)}, FFMA {ops.get('FFMA', 0)}")


def main() -> int:
    import os

    if os.environ.get("TRITON_INTERPRET") == "1":
        print("compile_fma.py: compiles for sm_90; run it without TRITON_INTERPRET=1", file=sys.stderr)
        return 2
    for direction in ("forward", "backward"):
        for hidden in (100, 128):
            for known in (False, True):
                print(row(direction, hidden, 4, known), flush=True)
        for chains in (1, 8):
            print(row(direction, 100, chains, False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
