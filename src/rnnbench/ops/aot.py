"""Compile the recurrence kernels for a GPU without one: the same front end, optimiser and
``ptxas`` that a launch on that GPU runs, so type errors, unsupported constructs, register spills
and shared memory overruns show up on a CPU-only machine (the interpreter checks the arithmetic,
not this).

    python -m rnnbench.ops.aot            # every kernel on the benchmark shapes' default plans, sm_90
    python -m rnnbench.ops.aot --quick    # every kernel once, each weight path, with and without lengths
    python -m rnnbench.ops.aot --lengths  # the benchmark shapes with and without lengths
    python -m rnnbench.ops.aot --sass DIR # also write each kernel's TTGIR and SASS under DIR

Pointer arguments are compiled as a launch sees them: 16-byte aligned (Triton specialises an
aligned pointer with ``tt.divisibility = 16``; without that every load would be scalar and the
register counts would describe a kernel that never runs). Either list ends with the weight-gradient
kernel (``ops/gradients.py``) in every dtype and precision it runs, then strict fp32's split
products (``ops/split_products.py``). Must run without
``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from . import gradients, projection, split_products
from .plans import (Plan, backward_precision, chip_split_level, choose_plan, fma_warps, gate_split_constexprs, k_chunks,
                    k_padded, row_stride, split_k_pieces, split_once_level)
from .gru.kernels import gru_backward_kernel, gru_backward_split_k_kernel, gru_forward_kernel
from .lstm.kernels import lstm_backward_kernel, lstm_backward_split_k_kernel, lstm_forward_kernel
from .lstm.pieces import lstm_backward_pieces_kernel, lstm_forward_pieces_kernel
from .gru.pieces import gru_backward_pieces_kernel, gru_forward_pieces_kernel
from .rnn.fma import CHAINS as FMA_CHAINS
from .rnn.fma import rnn_backward_fma_kernel, rnn_forward_fma_kernel
from .rnn.kernels import rnn_backward_kernel, rnn_forward_kernel

POINTER = {torch.float32: "*fp32", torch.bfloat16: "*bf16", torch.float16: "*fp16"}
F32_POINTERS = {"c_buf_ptr", "gates_ptr", "saved_ptr", "partials_ptr",  # fp32 whatever the dtype (saved for backward;
                "w_split_ptr", "h_split_ptr",  # split operands, Plan.split_once)
                "h_state_ptr", "d_state_ptr",  # (the GRU's fp32 h, the backward's state in slices: Plan.pieces)
                "ln_hat_ptr", "ln_rstd_ptr", "ln_sums_ptr"}  # (layer norm's saved values and sums: ops/layer_norm.py)
GATES = {"lstm": 4, "gru": 3, "rnn": 1}

KERNELS = {
    ("lstm", "forward"): lstm_forward_kernel, ("lstm", "backward"): lstm_backward_kernel,
    ("gru", "forward"): gru_forward_kernel, ("gru", "backward"): gru_backward_kernel,
    ("rnn", "forward"): rnn_forward_kernel, ("rnn", "backward"): rnn_backward_kernel,
    ("lstm", "forward", "pieces"): lstm_forward_pieces_kernel, ("gru", "forward", "pieces"): gru_forward_pieces_kernel,
    ("lstm", "backward", "pieces"): lstm_backward_pieces_kernel, ("gru", "backward", "pieces"): gru_backward_pieces_kernel,
    ("lstm", "backward", "split_k"): lstm_backward_split_k_kernel,
    ("gru", "backward", "split_k"): gru_backward_split_k_kernel,
    ("rnn", "forward", "fma"): rnn_forward_fma_kernel, ("rnn", "backward", "fma"): rnn_backward_fma_kernel,
}
# (cell, dtype, batch, hidden, precision): the shapes benchmarks/triton_dev.py times, and (last
# four) seed and plan-sweep shapes that batch blocks of 16 rows past batch 32 reach.
BENCHMARK_SHAPES = [
    ("lstm", torch.float32, 20, 100, "tf32x3"), ("lstm", torch.float32, 20, 500, "tf32x3"),
    ("lstm", torch.float32, 20, 500, "ieee"), ("rnn", torch.float32, 20, 100, "tf32x3"),
    ("gru", torch.float32, 128, 1024, "tf32x3"),
    ("lstm", torch.float32, 32, 512, "tf32"), ("lstm", torch.bfloat16, 32, 512, "ieee"),
    ("gru", torch.float32, 32, 512, "tf32"), ("gru", torch.bfloat16, 32, 512, "ieee"),
    ("lstm", torch.float32, 128, 512, "tf32"), ("lstm", torch.bfloat16, 128, 512, "ieee"),
    ("gru", torch.bfloat16, 128, 512, "ieee"), ("lstm", torch.bfloat16, 128, 1024, "ieee"),
    ("lstm", torch.bfloat16, 16, 768, "ieee"), ("lstm", torch.float16, 16, 768, "ieee"),
    ("rnn", torch.bfloat16, 32, 512, "ieee"),
    ("lstm", torch.float32, 128, 128, "tf32x3"), ("gru", torch.float32, 128, 128, "tf32"),
    ("lstm", torch.float32, 64, 512, "tf32x3"), ("rnn", torch.bfloat16, 128, 1024, "ieee"),
]
# Every kernel once, and each path: resident wgmma forward (LSTM bf16 at 768), strict fp32 streamed
# on FMA units both ways (GRU), strict fp32 as 3xTF32 streamed both ways (LSTM at 500) and resident
# forward (LSTM at 100); h on chip both ways (RNN fp16 at 4 warps, RNN 3xTF32 and LSTM bf16 at 8);
# the LSTM's split-K backward resident with partials 256 units high (bf16 at 768) and streamed 64
# high (3xTF32), its transpose backward at 1024 (TF32, streamed forward); strict fp32's split-once
# forward with the weights split in the step (LSTM at 500) and from a copy (GRU at 64 rows).
QUICK_SHAPES = [("lstm", torch.bfloat16, 16, 768, "ieee"), ("gru", torch.float32, 20, 100, "ieee"),
                ("lstm", torch.float32, 16, 1024, "tf32"),
                ("rnn", torch.float16, 3, 37, "ieee"), ("lstm", torch.float32, 20, 500, "tf32x3"),
                ("lstm", torch.float32, 20, 100, "tf32x3"), ("rnn", torch.float32, 20, 100, "tf32x3"),
                ("lstm", torch.bfloat16, 20, 100, "ieee"), ("gru", torch.float32, 128, 1024, "tf32x3"),
                # the on-chip RNN's 3xFP16 (Plan.on_chip_split; at batch 20 the RNN runs on FMA units)
                ("rnn", torch.float32, 512, 100, "tf32x3")]


def compile_kernel(cell: str, direction: str, dtype: torch.dtype, hidden_size: int, plan: Plan,
                   precision: str = "ieee", save: bool = True, capability: int = 90, lengths: bool = False,
                   drop: bool = False, norm: bool = False):
    """Compile one kernel for ``sm_<capability>``; returns Triton's CompiledKernel (``.asm`` holds
    ``ttgir``, ``ptx``, ``cubin``; ``.metadata.shared`` the shared memory in bytes). ``cell`` is
    ``lstm``, ``gru`` or ``rnn``; ``lengths``: the variable-length variant (``HAS_LENGTHS``);
    ``drop``: with recurrent dropout (``DROP``, the kernels that take it); ``norm``: with layer
    norm (``LN``: the ``tl`` forwards and backwards on chip)."""
    if plan.fma and cell in ("lstm", "gru"):
        return compile_gated_fma(cell, dtype, hidden_size, plan, save, capability, lengths, precision)
    split_k = direction == "backward" and plan.split_k
    variant = "split_k" if split_k else "fma" if plan.fma else "pieces" if plan.pieces > 1 else None
    fn = KERNELS[(cell, direction, variant) if variant else (cell, direction)]
    names = fn.arg_names
    kp = k_padded(hidden_size)
    # The split-K backward's pieces are block_k units high, however wide h is padded.
    block_k, chunks = (plan.block_k, split_k_pieces(hidden_size, plan.block_k)) if split_k else k_chunks(
        hidden_size, plan.block_k)
    constexprs = dict(H=hidden_size, BLOCK_B=plan.block_b, BLOCK_H=plan.block_h, BLOCK_K=block_k,
                      K_PAD=kp, CHUNKS=chunks, W_RESIDENT=plan.w_resident, ON_CHIP=plan.h_on_chip, PRECISION=precision,
                      UPCAST=False, FAST_ACT=plan.fast_activations, SPLIT_ONCE=split_once_level(plan),
                      CHIP_SPLIT=chip_split_level(plan), SAVE=save, RELU=False,
                      HAS_BIAS=True, HAS_H0=True, HAS_C0=True, HAS_D_OUT=True, HAS_D_H_N=True, HAS_D_C_N=True,
                      HAS_LENGTHS=lengths, CHAINS=FMA_CHAINS, PDL=capability >= 90,
                      H_STRIDE=row_stride(plan, hidden_size), PIECES=plan.pieces, DROP=drop, LN=norm)
    if direction == "backward":  # (always: a constexpr left out would compile as a runtime argument)
        constexprs.update(gate_split_constexprs(plan, hidden_size))
    stages = plan.num_stages
    if fn is rnn_forward_fma_kernel:  # (the producing forward's tiles, Plan.produce: the masked ones)
        produced = projection.produced_constexprs(precision, False, projection.TILES, False)
        stages = produced.pop("num_stages") if plan.produce else stages
        constexprs.update(produced if plan.produce else projection.UNPRODUCED)
    constexprs = {k: v for k, v in constexprs.items() if k in names}
    # (a forward's saved gates in the weights' dtype: Plan.half_saved; a backward's read as fp32)
    f32 = (F32_POINTERS - ({"partials_ptr"} if plan.half_partials else set())
           - ({"gates_ptr", "saved_ptr"} if plan.half_saved else set()))
    pointers = {"counters_ptr": "*i32", "lengths_ptr": "*i32", **{name: "*fp32" for name in f32}}
    if split_once_level(plan) in (3, 4) and direction == "forward":  # (fp16 copies of W_hh and h: recurrence_forward)
        pointers.update(w_split_ptr="*fp16", h_split_ptr="*fp16")
    if split_once_level(plan) == 5 and direction == "forward":  # (16-bit copies in the weights' dtype)
        pointers.update(w_split_ptr=POINTER[dtype], h_split_ptr=POINTER[dtype])
    return _compile(fn, constexprs, pointers, POINTER[dtype], plan.num_warps, stages, capability)


def _compile(fn, constexprs: dict, pointers: dict[str, str], pointer: str, num_warps: int, num_stages: int,
             capability: int, source_type=ASTSource):
    """Compile JIT function ``fn`` for ``sm_<capability>`` as a launch specialises it: the
    ``constexprs`` by value, every ``*_ptr`` argument 16-byte aligned and of type ``pointers[name]``
    (``pointer`` for the rest), every other argument an unspecialised ``i32``. ``source_type``:
    Triton's ``ASTSource``, or Gluon's ``GluonASTSource`` for a ``@gluon.jit`` kernel."""
    names = fn.arg_names
    signature = {n: "constexpr" if n in constexprs else pointers.get(n, pointer) if n.endswith("_ptr") else "i32"
                 for n in names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n.endswith("_ptr")}
    source = source_type(fn, signature, constexprs={(names.index(k),): v for k, v in constexprs.items()}, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


def compile_gated_fma(cell: str, dtype: torch.dtype, hidden_size: int, plan: Plan, save: bool = True,
                      capability: int = 90, lengths: bool = False, precision: str | None = None):
    """Compile the LSTM's or GRU's forward on FMA units (``ops/<cell>/fma.py``, Gluon; only where
    :data:`~rnnbench.ops.gluon_common.AVAILABLE`) as :func:`compile_kernel` does the ``tl`` kernels;
    with ``precision`` and :attr:`Plan.produce`, the producing variant (``ops/gluon_produce.py``,
    its narrower tiles)."""
    from triton.experimental.gluon._runtime import GluonASTSource

    from . import gluon_fma, gluon_produce
    from .gru.fma import gru_forward_fma_kernel
    from .lstm.fma import lstm_forward_fma_kernel

    fn = lstm_forward_fma_kernel if cell == "lstm" else gru_forward_fma_kernel
    gates = GATES[cell]
    constexprs = dict(HAS_BIAS=True, HAS_H0=True, HAS_C0=True, SAVE=save, HAS_LENGTHS=lengths, PDL=capability >= 90,
                      **gluon_fma.constexprs(gates, hidden_size, plan.num_warps, fma_warps(hidden_size),
                                             plan.fast_activations, plan.half_weights))
    produce = plan.produce and precision is not None
    constexprs.update(gluon_produce.constexprs(precision, gluon_produce.TILE_N[0]) if produce
                      else gluon_produce.UNPRODUCED)
    if produce:
        constexprs["PDL"] = False  # (a producing launch is never a dependent one: recurrence_forward)
    constexprs = {k: v for k, v in constexprs.items() if k in fn.arg_names}
    pointers = {"lengths_ptr": "*i32", "counter_ptr": "*i32", **{name: "*fp32" for name in F32_POINTERS}}
    return _compile(fn, constexprs, pointers, POINTER[dtype], plan.num_warps, plan.num_stages, capability,
                    GluonASTSource)


# The fused weight-gradient kernel (ops/gradients.py) in each dtype and product precision it runs.
GRADIENT_VARIANTS = [(torch.float32, "tf32x3"), (torch.float32, "ieee"), (torch.float32, "tf32"),
                     (torch.bfloat16, "ieee"), (torch.float16, "ieee")]


def compile_gradients(dtype: torch.dtype, precision: str, gates: int = 4, capability: int = 90,
                      is_even: bool = False):
    """Compile :func:`~rnnbench.ops.gradients.layer_gradients_kernel` for ``sm_<capability>``, every
    pointer 16-byte aligned, as :func:`~rnnbench.ops.gradients.layer_gradients` launches it
    (``is_even``: its unmasked path, :func:`~rnnbench.ops.products.even`)."""
    # (both bias paths: db_ih with dW_ih's tiles, db_hh with dW_hh's, as the GRU's)
    tiles = gradients.layer_tiles(dtype)
    constexprs = dict(GATES=gates, DB_IH=True, DB_HH_FROM_IH=False, DB_HH=True, PRECISION=precision, UPCAST=False,
                      BM=tiles.bm, BN=tiles.bn, BK=tiles.bk, EVEN=is_even)
    pointers = {"part_ptr": "*fp32", "count_ptr": "*i32"}  # the split products' partials and counters
    return _compile(gradients.layer_gradients_kernel, constexprs, pointers, POINTER[dtype], tiles.num_warps,
                    tiles.num_stages, capability)


# The split products' launches, the widest their callers make: the operands' transposes of a split
# and which of them are summed too (the projection's x and W_ih; a GRU layer's gradients: d_gx,
# W_ih^T, d_gx^T, x^T, d_gh^T, h^T, the biases' sums from d_gx^T and d_gh^T; an LSTM's or a call
# for fewer gradients launches fewer operands), and the products' whole stores (one masked, one
# whole, a layer's three gradients whole and masked).
SPLIT_VARIANTS = {"projection": ((False, False), ()),
                  "gradients": ((False, True, True, True, True, True), (False, False, True, False, True, False))}
PRODUCT_VARIANTS = {"split-product": (False,), "split-product-even": (True,), "split-products-even": (True,) * 3,
                    "split-products": (False,) * 3}


def compile_split_products(capability: int = 90) -> dict:
    """Compile strict fp32's split products (``ops/split_products.py``) for ``sm_<capability>`` as
    they launch (:data:`SPLIT_VARIANTS`, :data:`PRODUCT_VARIANTS`; their compile-time arguments
    from the module's own builders): the line maxima and the split of several operands, and the
    products. Returns ``{label: compiled}``."""
    sp = split_products
    f16 = {"halves_ptr": "*fp16", "a_ptr": "*fp16", "b_ptr": "*fp16"}

    def compile_with(fn, constexprs, pointers):
        values = dict(constexprs.values)
        warps, stages = values.pop("num_warps"), values.pop("num_stages", 3)
        return _compile(fn, values, pointers, "*fp32", warps, stages, capability)

    kernels = {}
    for label, (transposes, sums) in SPLIT_VARIANTS.items():
        maxima, split = sp.split_constexprs_for(transposes, sums)
        kernels[f"line-max-{label}"] = compile_with(sp.line_max_kernel, maxima, {})
        kernels[f"split-{label}"] = compile_with(sp.split_kernel, split, f16)
    for label, evens in PRODUCT_VARIANTS.items():
        kernels[label] = compile_with(sp.split_product_kernel, sp.product_constexprs_for(evens), f16)
    return kernels


def _tool(name: str) -> Path:
    return Path(triton.backends.nvidia.__file__).parent / "bin" / name


def sass(compiled) -> str:
    """The cubin disassembled (``cuobjdump -sass``); empty when the tool is missing."""
    if not _tool("cuobjdump").exists():
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        return subprocess.run([str(_tool("cuobjdump")), "-sass", f.name], capture_output=True, text=True).stdout


def resource_usage(compiled) -> dict:
    """Registers per thread, stack (spill) bytes and shared memory bytes; the matrix instructions
    in the SASS (``hgmma`` = Hopper wgmma, ``hmma`` = mma.sync, ``ffma`` = FMA), local-memory
    accesses (``ldl``/``stl``: spills), the MUFU's tanh (``mufu_tanh``: fast activations) and the
    waits for wgmma results (``wgmma_waits``: ``WARPGROUP.DEPBAR``)."""
    usage = {"shared": compiled.metadata.shared}
    if not _tool("cuobjdump").exists():
        return usage
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        text = subprocess.run([str(_tool("cuobjdump")), "--dump-resource-usage", f.name], capture_output=True,
                              text=True).stdout
    found = dict(re.findall(r"(REG|STACK):(\d+)", text))
    usage.update({k.lower(): int(v) for k, v in found.items()})
    code = sass(compiled)
    ops = Counter(m.group(1) for m in re.finditer(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9]*)", code))
    usage.update({op.lower(): ops.get(op, 0) for op in ("HGMMA", "HMMA", "FFMA", "LDL", "STL")})
    usage["mufu_tanh"] = code.count("MUFU.TANH")  # Plan.fast_activations
    usage["wgmma_waits"] = code.count("WARPGROUP.DEPBAR")  # a chain of wgmma waited for before use
    return usage


# A global load or store with its qualifiers (its width: ``.v4.b32`` is 16 bytes), or a
# ``cp.async`` copy from global to shared memory with its size in bytes (its last operand).
_GLOBAL_ACCESS = re.compile(r"(ld|st)\.global[.a-z0-9]*"
                            r"|cp\.async\.c[ag]\.shared\.global \[[^]]*\], \[[^]]*\], 0x[0-9a-f]+")


def global_accesses(ptx: str) -> dict[str, int]:
    """How many of each global access form a kernel's PTX (``compiled.asm["ptx"]``) holds, by
    name: ``ld.global.v4.b32`` (a 16-byte load), ``st.global.b16``, ``cp.async.cg.shared.global
    0x10`` (a 16-byte copy into shared memory, its addresses left out); sorted by name. What a
    row's alignment decides (``Plan.pad_rows``: 16-byte rows let the compiler take the widest
    forms); read, not run, so a compile without a GPU shows it."""
    found = Counter(re.sub(r"\[[^]]*\], ", "", m.group(0)) for m in _GLOBAL_ACCESS.finditer(ptx))
    return dict(sorted(found.items()))


def variant_usage(cell: str, direction: str, dtype: torch.dtype, batch: int, hidden: int, precision: str,
                  plan_fields: dict, changes: dict) -> tuple[Plan, dict]:
    """The plan for an H100 (132 multiprocessors) that ``choose_plan`` makes with ``plan_fields``
    (checked like any override), then ``changes`` (Plan fields) applied unchecked, and the
    :func:`resource_usage` of that kernel compiled for sm_90 with the direction's products
    (``precision`` is the forward's): for comparing a plan with rejected ones."""
    plan = choose_plan(batch, hidden, GATES[cell], dtype, torch.device("cuda"), multiprocessors=132,
                       precision=precision, direction=direction, **plan_fields)
    plan = dataclasses.replace(plan, **changes)
    products = backward_precision(precision, GATES[cell]) if direction == "backward" else precision
    return plan, resource_usage(compile_kernel(cell, direction, dtype, hidden, plan, products))


def main(argv: list[str]) -> int:
    """Compile every kernel on the default plans of a few shapes (planned for an H100: 132
    multiprocessors) and print registers, spills and shared memory; exit 1 on a failure."""
    failures = 0
    shapes = QUICK_SHAPES if "--quick" in argv else BENCHMARK_SHAPES
    # the variable-length variant (HAS_LENGTHS) beside each kernel, or only the kernel as it is
    variants = (False, True) if "--quick" in argv or "--lengths" in argv else (False,)
    out_dir = Path(argv[argv.index("--sass") + 1]) if "--sass" in argv else None
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
    cuda = torch.device("cuda")
    for (cell, dtype, batch, hidden, precision), lengths in itertools.product(shapes, variants):
        for direction in ("forward", "backward"):
            plan = choose_plan(batch, hidden, GATES[cell], dtype, cuda, multiprocessors=132, precision=precision,
                               direction=direction)
            label = (f"{cell}-{direction}-{str(dtype).removeprefix('torch.')}-B{batch}-H{hidden}-{precision}"
                     f"{'-lengths' if lengths else ''} "
                     f"bb={plan.block_b} bh={plan.block_h} res={int(plan.w_resident)} bk={plan.block_k} "
                     f"w={plan.num_warps} st={plan.num_stages} chip={int(plan.h_on_chip)} "
                     f"fast={int(plan.fast_activations)} split={int(plan.split_k)} once={split_once_level(plan)} "
                     f"fma={int(plan.fma)} "
                     f"progs={math.prod(plan.grid(batch, hidden))}")
            try:
                products = backward_precision(precision, GATES[cell]) if direction == "backward" else precision
                compiled = compile_kernel(cell, direction, dtype, hidden, plan, products, lengths=lengths)
                print(f"ok    {label} {resource_usage(compiled)}", flush=True)
                if out_dir:
                    stem = label.split()[0]
                    (out_dir / f"{stem}.ttgir").write_text(compiled.asm["ttgir"])
                    (out_dir / f"{stem}.sass").write_text(sass(compiled))
            except Exception as err:  # report every failure, then exit non-zero
                failures += 1
                print(_failure(label, err))
    for (dtype, precision), is_even in itertools.product(GRADIENT_VARIANTS, (False, True)):
        label = f"gradients-{str(dtype).removeprefix('torch.')}-{precision}{'-even' if is_even else ''}"
        try:
            print(f"ok    {label} {resource_usage(compile_gradients(dtype, precision, is_even=is_even))}", flush=True)
        except Exception as err:
            failures += 1
            print(_failure(label, err))
    try:
        for label, compiled in compile_split_products().items():
            print(f"ok    {label} {resource_usage(compiled)}", flush=True)
    except Exception as err:
        failures += 1
        print(_failure("split products", err))
    return 1 if failures else 0


def _failure(label: str, err: Exception) -> str:
    """The one line ``main`` prints for a kernel that did not compile."""
    return f"FAIL  {label}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
