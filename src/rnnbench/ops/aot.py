"""Compile the recurrence kernels for a GPU without one: the same front end, optimiser and
``ptxas`` that a launch on that GPU runs, so type errors, unsupported constructs and register
spills show up on a CPU-only machine (the interpreter checks the arithmetic, not this).

    python -m rnnbench.ops.aot            # every kernel, a few plans, for sm_90 (H100)
    python -m rnnbench.ops.aot --quick    # every kernel, resident fp32 and streamed bf16 only

Must run without ``TRITON_INTERPRET=1`` (then the kernels are interpreted functions).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .common import Plan, next_pow2
from .gru.kernels import gru_backward_kernel, gru_forward_kernel
from .lstm.kernels import lstm_backward_kernel, lstm_forward_kernel
from .rnn.kernels import rnn_backward_kernel, rnn_forward_kernel

POINTER = {torch.float32: "*fp32", torch.bfloat16: "*bf16", torch.float16: "*fp16"}
F32 = "*fp32"

KERNELS = {
    ("lstm", "forward"): lstm_forward_kernel, ("lstm", "backward"): lstm_backward_kernel,
    ("gru", "forward"): gru_forward_kernel, ("gru", "backward"): gru_backward_kernel,
    ("rnn", "forward"): rnn_forward_kernel, ("rnn", "backward"): rnn_backward_kernel,
}


def _pointer_types(cell: str, direction: str, dtype: torch.dtype) -> list[str]:
    """Pointer argument types in each kernel's order (``d`` = the weights' dtype)."""
    d = POINTER[dtype]
    return {
        ("lstm", "forward"): [d, d, d, F32, F32, F32, "*i32"],
        ("lstm", "backward"): [d, F32, F32, F32, F32, d, d, F32, F32, "*i32"],
        ("gru", "forward"): [d, d, d, d, F32, "*i32"],
        ("gru", "backward"): [d, F32, F32, d, d, d, d, F32, "*i32"],
        ("rnn", "forward"): [d, d, d, F32, "*i32"],
        ("rnn", "backward"): [d, F32, F32, d, d, F32, "*i32"],
    }[(cell, direction)]


def compile_kernel(cell: str, direction: str, dtype: torch.dtype, hidden_size: int, plan: Plan,
                   precision: str = "ieee", save: bool = True, capability: int = 90):
    """Compile one kernel for ``sm_<capability>``; returns Triton's CompiledKernel (``.asm`` holds
    ``ttgir``, ``ptx``, ``cubin``). ``cell`` is ``lstm``, ``gru`` or ``rnn``."""
    fn = KERNELS[(cell, direction)]
    names = fn.arg_names
    pointers = _pointer_types(cell, direction, dtype)
    constexprs = dict(H=hidden_size, BLOCK_B=plan.block_b, BLOCK_H=plan.block_h,
                      BLOCK_K=min(plan.block_k, max(16, next_pow2(hidden_size))),
                      K_PAD=max(16, next_pow2(hidden_size)), W_RESIDENT=plan.w_resident,
                      PRECISION=precision, UPCAST=False)
    if "SAVE" in names:
        constexprs["SAVE"] = save
    if "RELU" in names:
        constexprs["RELU"] = False
    signature = {}
    for i, name in enumerate(names):
        if i < len(pointers):
            signature[name] = pointers[i]
        elif name in constexprs:
            signature[name] = "constexpr"
        else:
            signature[name] = "i32"  # T, B
    source = ASTSource(fn, signature, constexprs={(names.index(k),): v for k, v in constexprs.items()})
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": plan.num_warps})


def resource_usage(compiled) -> dict:
    """Registers per thread and spill bytes, read from the cubin with ``cuobjdump`` (shipped
    with Triton's NVIDIA backend); empty when the tool is missing."""
    tool = Path(triton.backends.nvidia.__file__).parent / "bin" / "cuobjdump"
    if not tool.exists():
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        text = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    found = dict(re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", text))
    return {k.lower(): int(v) for k, v in found.items()}


def main(argv: list[str]) -> int:
    """Compile every kernel for a few plans and print registers and spills; exit 1 on a failure."""
    failures = 0
    cases = [(torch.float32, 100, Plan(16, 16, True), "ieee"), (torch.bfloat16, 768, Plan(16, 16, False), "ieee"),
             (torch.float32, 512, Plan(32, 16, False, num_warps=8), "tf32"), (torch.float16, 37, Plan(16, 64, True), "ieee")]
    if "--quick" in argv:
        cases = cases[:2]
    for (cell, direction) in KERNELS:
        for dtype, hidden, plan, precision in cases:
            label = f"{cell}-{direction}-{str(dtype).removeprefix('torch.')}-H{hidden}-{plan}-{precision}"
            try:
                usage = resource_usage(compile_kernel(cell, direction, dtype, hidden, plan, precision))
                print(f"ok    {label} {usage}")
            except Exception as err:  # report every failure, then exit non-zero
                failures += 1
                print(f"FAIL  {label}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
