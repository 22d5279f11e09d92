"""Pieces every recurrent kernel shares: tile loads, the recurrent matmul, tanh, the grid-wide
barrier, and the launch plan (how hidden units and batch rows are split across programs).

Layout convention of every kernel: a program owns ``BLOCK_B`` batch rows and ``BLOCK_H`` hidden
units (``pid_b = program_id(1)``, ``pid_h = program_id(0)``). The programs of one batch block
exchange ``h_t`` (or, backward, the gate gradients) through global memory and meet at a barrier on
their own counter once per step; different batch blocks never wait for each other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

# Under TRITON_INTERPRET=1 programs run one after another on the CPU, so programs that wait for
# each other would hang: there, one program owns all hidden units of its batch block.
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_INTERPRET = tl.constexpr(INTERPRET)  # visible inside kernels
# Tests may run the interpreter's programs in threads, side by side (tests/ops/conftest.py); only
# then may a batch block have several programs under the interpreter.
INTERPRETER_PROGRAMS_CONCURRENT = False

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Register budget for keeping a program's recurrent weights on chip across all steps: 32 KB is
# 64 registers per thread at 4 warps, leaving room for the gate tiles. Larger slices re-read
# their weights from L2 each step (tuned on the device later).
RESIDENT_WEIGHT_BYTES = 32 * 1024
# Tile sizes: tl.dot needs every block dimension >= 16.
MIN_BLOCK = 16
MAX_BLOCK_B = 64
MAX_BLOCK_H = 256
BLOCK_K = 64


@triton.jit
def _tanh(x):
    """tanh in fp32 from exp: sign(x) (1 - e) / (1 + e) with e = exp(-2|x|); absolute error about
    1e-7, the odd Taylor terms below |x| < 1e-2 keep small arguments relatively accurate too."""
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    big = (1.0 - e) / (1.0 + e)
    small = ax * (1.0 - ax * ax / 3.0)
    y = tl.where(ax < 1e-2, small, big)
    return tl.where(x < 0, -y, y)


@triton.jit
def _mma(a, b, acc, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """acc + a @ b with fp32 accumulation. UPCAST widens the operands first: the CPU interpreter
    multiplies bfloat16 tiles wrongly, and bf16 x bf16 products are exact in fp32 anyway."""
    if UPCAST:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        out = tl.dot(a, b, acc, input_precision=PRECISION)
    return out


@triton.jit
def _load_rows(ptr, stride_row, rows, row_mask, k0, K: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile ``[BLOCK_B, BLOCK_K]`` of a row-major matrix: ``ptr[rows, k0:k0+BLOCK_K]`` (columns
    >= K read as 0), in the matrix's own dtype (it feeds tl.dot). These are the values other
    programs wrote before the last barrier, so they are read from L2 (``.cg``): an L1 line
    cached earlier (e.g. one straddling the previous step's plane) would be stale."""
    rk = k0 + tl.arange(0, BLOCK_K)
    mask = row_mask[:, None] & (rk < K)[None, :]
    return tl.load(ptr + rows[:, None] * stride_row + rk[None, :], mask=mask, other=0.0, cache_modifier=".cg")


@triton.jit
def _load_weights(ptr, stride_k, stride_n, cols, col_mask, k0, K: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile ``[BLOCK_K, BLOCK_H]``: element (k, j) at ``ptr + k*stride_k + cols[j]*stride_n``.
    Forward reads W_hh^T (stride_k=1, stride_n=H), backward W_hh itself (stride_k=H, stride_n=1)."""
    rk = k0 + tl.arange(0, BLOCK_K)
    mask = (rk < K)[:, None] & col_mask[None, :]
    return tl.load(ptr + rk[:, None] * stride_k + cols[None, :] * stride_n, mask=mask, other=0.0)


@triton.jit
def _load_f32(ptr, offsets, mask):
    return tl.load(ptr + offsets, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _matmul_from_l2(a_ptr, stride_a, rows, row_mask, w_ptr, stride_k, stride_n, cols, col_mask, acc,
                    K: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """acc + A[rows, :K] @ Wtile[:K, cols], walking K in BLOCK_K chunks, weights re-read each call
    (they stay in L2 across steps). Shapes: acc ``[BLOCK_B, BLOCK_H]`` fp32."""
    for k0 in range(0, K, BLOCK_K):
        a = _load_rows(a_ptr, stride_a, rows, row_mask, k0, K, BLOCK_K)
        w = _load_weights(w_ptr, stride_k, stride_n, cols, col_mask, k0, K, BLOCK_K)
        acc = _mma(a, w, acc, PRECISION, UPCAST)
    return acc


@triton.jit
def _grid_barrier(counter_ptr, target):
    """Wait until ``target`` arrivals have been counted at ``counter_ptr`` (ours included).

    The CTA barrier before the release makes every thread's stores of this step part of what the
    release publishes (as CUDA cooperative groups' grid sync does); the acquire spin makes the
    other programs' stores visible before anyone reads them. With one program the wait is
    satisfied by our own arrival, so the same code runs under the interpreter; there a lone
    program whose count falls short of the target would spin forever, so it raises instead (plain Python, which only the
    interpreter runs: the compiler never visits a branch whose constexpr condition is false).
    """
    tl.debug_barrier()
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
    if _INTERPRET:
        if tl.num_programs(0) == 1 and tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < target:
            raise RuntimeError("grid barrier never satisfied: the interpreter runs programs one after "
                               "another, so this wait would never end")
    while tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu") < target:
        pass
    tl.debug_barrier()


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


@dataclass(frozen=True)
class Plan:
    """How one recurrence is split across programs.

    Attributes:
        block_b: batch rows per program (power of 2, >= 16; rows past batch_size are masked).
        block_h: hidden units per program (power of 2, >= 16).
        w_resident: load the program's recurrent weights once, before the time loop, and keep
            them in registers; otherwise re-read them from L2 in BLOCK_K chunks every step.
        block_k: reduction chunk when not resident (ignored when resident).
        num_warps: warps per program.
    """

    block_b: int
    block_h: int
    w_resident: bool
    block_k: int = BLOCK_K
    num_warps: int = 4

    def grid(self, batch_size: int, hidden_size: int) -> tuple[int, int]:
        """(programs over hidden units, programs over batch rows)."""
        return triton.cdiv(hidden_size, self.block_h), triton.cdiv(batch_size, self.block_b)


def choose_plan(batch_size: int, hidden_size: int, num_gates: int, dtype: torch.dtype,
                device: torch.device, multiprocessors: int | None = None, **override) -> Plan:
    """The default split for a recurrence, with ``override`` (Plan fields) applied.

    On CUDA the hidden units are split as finely as the grid-residency rule allows: every program
    must be resident at once (they wait for each other), so programs <= multiprocessors.
    Under the interpreter one program owns all hidden units of its batch block.
    ``multiprocessors`` stands in for the CUDA device's count (to plan for a GPU not present).

    Raises:
        ValueError: a plan whose programs cannot all be resident (more programs than
            multiprocessors on CUDA, more than one program per batch block under the interpreter),
            or a block size that is not a power of 2 >= 16.
    """
    bb = min(max(MIN_BLOCK, next_pow2(batch_size)), MAX_BLOCK_B)
    if device.type == "cuda":
        slots = multiprocessors or torch.cuda.get_device_properties(device).multi_processor_count
        nb = triton.cdiv(batch_size, bb)
        bh = MIN_BLOCK
        while triton.cdiv(hidden_size, bh) * nb > slots and bh < MAX_BLOCK_H:
            bh *= 2
    else:
        slots = None
        bb = max(MIN_BLOCK, next_pow2(batch_size))
        bh = max(MIN_BLOCK, next_pow2(hidden_size))
    k_pad = max(MIN_BLOCK, next_pow2(hidden_size))
    element = torch.empty((), dtype=dtype).element_size()
    bh = override.get("block_h", bh)
    resident = num_gates * k_pad * bh * element <= RESIDENT_WEIGHT_BYTES or device.type != "cuda"
    # Wider batch tiles get more warps: at 4 warps a 32-row fp32 tile made ptxas spill (sm_90).
    warps = 8 if bb >= 32 else 4
    plan = Plan(**{"block_b": bb, "block_h": bh, "w_resident": resident, "num_warps": warps, **override})
    for name in ("block_b", "block_h", "block_k"):
        value = getattr(plan, name)
        if value < MIN_BLOCK or value != next_pow2(value):
            raise ValueError(f"{name} must be a power of 2 >= {MIN_BLOCK}, got {value}")
    nh, nb = plan.grid(batch_size, hidden_size)
    if slots is None and nh > 1 and not INTERPRETER_PROGRAMS_CONCURRENT:
        raise ValueError(f"{nh} programs per batch block would wait for each other forever under "
                         "the interpreter (it runs programs one after another); use block_h >= hidden_size")
    if slots is not None and nh * nb > slots:
        raise ValueError(f"{nh * nb} programs cannot all be resident on {slots} multiprocessors "
                         f"(batch_size {batch_size}, hidden_size {hidden_size})")
    return plan


def dot_precision(dtype: torch.dtype) -> str:
    """tl.dot input precision: strict IEEE fp32 unless torch allows TF32 matmuls (the setting
    rnnbench's ``tf32`` dtype turns on); ignored for half types."""
    if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 and not INTERPRET:
        return "tf32"
    return "ieee"


def upcast_dot(dtype: torch.dtype) -> bool:
    """Widen dot operands to fp32 (only under the interpreter, whose bf16 dot is wrong)."""
    return INTERPRET and dtype == torch.bfloat16
