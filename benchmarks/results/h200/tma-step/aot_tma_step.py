"""The TMA probe's forms, the step-parts probe's product-only step and the sliced LSTM forward,
compiled for sm_90 (no GPU: ``rnnbench.ops.aot``): registers, stack (spill) bytes, shared memory,
and the loop that holds the first wgmma (the product's K loop): its length, its local-memory
accesses, and whether two kernels' loops are the same instructions with registers renamed. bf16,
batch 1024, hidden 2048, the default plan's tile (128 rows, 128 units, 2 slices, 8 warps, 4 stages).

    PYTHONPATH=src python benchmarks/results/h200/tma-step/aot_tma_step.py > aot_tma_step.txt

(run with Triton 3.6, the GPU's, which compiles for sm_90: ``/tmp/t36`` in this project's notes.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "probes"))
sys.path.insert(0, str(HERE.parent / "step-parts" / "probes"))

TILE = dict(H=2048, BLOCK_B=128, BLOCK_H=128, PIECES=2)
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def compile_probe(fn, constexprs: dict, block_k: int, stages: int):
    """A probe kernel as a launch specialises it: pointers 16-byte aligned, the descriptors' blocks."""
    signature = {}
    for name in fn.arg_names:
        if name in constexprs:
            signature[name] = "constexpr"
        elif name == "w_desc":
            signature[name] = f"tensordesc<bf16[{TILE['BLOCK_H'] // TILE['PIECES']}, {block_k}]>"
        elif name == "h_desc":
            signature[name] = f"tensordesc<bf16[{TILE['BLOCK_B']}, {block_k}]>"
        elif name.endswith("_ptr"):
            signature[name] = "*i32" if "counter" in name else "*fp32" if name == "c_ptr" else "*bf16"
        else:
            signature[name] = "i32"
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names) if n.endswith("_ptr")}
    source = ASTSource(fn, signature, constexprs={(fn.arg_names.index(k),): v for k, v in constexprs.items()},
                       attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": stages})


def product_loop(code: str) -> list[str]:
    """The instructions of the loop that holds the first HGMMA: from the target of the first
    backward branch after it to that branch, addresses dropped."""
    found = [(int(a, 16), text) for a, text in INSTRUCTION.findall(code)]
    first = next(i for i, (_, text) in enumerate(found) if "HGMMA" in text)
    for address, text in found[first:]:
        target = re.search(r"BRA 0x([0-9a-f]+)", text)
        if target and int(target.group(1), 16) < found[first][0]:
            start = next(i for i, (a, _) in enumerate(found) if a == int(target.group(1), 16))
            end = next(i for i, (a, _) in enumerate(found) if a == address)
            return [t for _, t in found[start:end + 1]]
    raise ValueError("no loop around the first HGMMA")


# The loop's memory, barrier and matrix instructions (the rest is integer address arithmetic)
WORK = ("LDGSTS", "LDGDEPBAR", "DEPBAR", "BAR", "LDS", "STS", "HGMMA", "WARPGROUP", "WARPSYNC", "SYNCS")


def work(loop: list[str]) -> list[str]:
    """The loop's :data:`WORK` instructions in order, registers and addresses numbered away."""
    ops = [re.sub(r"^@!?U?P\w+\s+", "", t) for t in loop]
    return [re.sub(r"\bU?R\d+\b", "R", re.sub(r"0x[0-9a-f]+", "X", t)) for t in ops if t.startswith(WORK)]


def main() -> None:
    import step_parts
    import tma_step

    from rnnbench.ops import aot
    from rnnbench.ops.plans import choose_plan

    kernels = {"tma_step pointer (32-wide chunks)": compile_probe(
        tma_step.step_product_kernel, dict(TILE, BLOCK_K=32, TMA=False, FENCE=True, ROWS_FIRST=False), 32, 4)}
    for block_k, stages, rows_first in tma_step.TMA_TILES:
        kernels[f"tma_step TMA {block_k} x {stages}{' rows first' if rows_first else ''}"] = compile_probe(
            tma_step.step_product_kernel, dict(TILE, BLOCK_K=block_k, TMA=True, FENCE=True, ROWS_FIRST=rows_first),
            block_k, stages)
    kernels["step_parts product"] = compile_probe(
        step_parts.step_parts_kernel, dict(TILE, BLOCK_K=32, X=False, C=False, A=False, FAST=True, NARROW=False), 32, 4)
    plan = choose_plan(1024, 2048, 4, torch.bfloat16, torch.device("cuda"), multiprocessors=132, precision="ieee")
    kernels["lstm_forward_pieces_kernel, no save"] = aot.compile_kernel("lstm", "forward", torch.bfloat16, 2048, plan,
                                                                        "ieee", save=False)
    print(f"Triton {triton.__version__}; bf16, 1024 x 2048; kernel | reg stack shared | product loop: instructions, "
          "LDL+STL in it")
    loops = {}
    for name, compiled in kernels.items():
        usage, code = aot.resource_usage(compiled), aot.sass(compiled)
        loop = product_loop(code) if usage.get("hgmma") else []
        loops[name] = loop
        spills = sum(t.startswith(("LDL", "STL")) for t in loop)
        print(f"{name} | {usage.get('reg')} {usage.get('stack')} {usage.get('shared')} | "
              + (f"{len(loop)}, {spills}" if loop else "no wgmma"), flush=True)
    a, b = loops["tma_step pointer (32-wide chunks)"], loops["step_parts product"]
    print(f"tma_step pointer's and step_parts product's loops: {len(a)} and {len(b)} instructions; their "
          f"{len(work(a))} memory, barrier and wgmma instructions the same in order (registers renamed): "
          f"{work(a) == work(b)}; the whole loops the same: {a == b}")


if __name__ == "__main__":
    if sys.argv[1:]:  # (it takes none: one line, no traceback)
        print("usage: PYTHONPATH=src python aot_tma_step.py > aot_tma_step.txt", file=sys.stderr)
        sys.exit(2)
    main()
