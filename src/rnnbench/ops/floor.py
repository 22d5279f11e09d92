"""Kernels that measure the floor under a persistent recurrent step, and check the barrier.

- :func:`barrier_floor`: T grid-wide barriers and nothing else: the exchange cost per step.
- :func:`dot_floor`: per step, a ``[B, H] x [H, BLOCK_H]`` ``tl.dot`` against weights held on
  chip, h read from and written to global memory, then the barrier: the cheapest recurrence the
  program layout allows (no gates, no saves).
- :func:`barrier_check`: every program writes the step number into its slot, passes the barrier,
  and counts slots still behind the step: a correct barrier counts zero.

Each returns what it wrote so tests can check it; timing belongs to the caller.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .common import _grid_barrier, _load_rows, _load_weights, _mma, next_pow2


@triton.jit(do_not_specialize=["T"])
def _barrier_floor_kernel(counter_ptr, T):
    t = 0
    while t < T:
        _grid_barrier(counter_ptr, tl.num_programs(0) * (t + 1))
        t += 1


@triton.jit(do_not_specialize=["T", "B"])
def _dot_floor_kernel(h_buf_ptr, w_ptr, counter_ptr, T, B, H: tl.constexpr, BLOCK_B: tl.constexpr,
                      BLOCK_H: tl.constexpr, K_PAD: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, BLOCK_B)
    cols = pid * BLOCK_H + tl.arange(0, BLOCK_H)
    row_mask = rows < B
    col_mask = cols < H
    mask = row_mask[:, None] & col_mask[None, :]
    plane = B.to(tl.int64) * H
    w = _load_weights(w_ptr, 1, H, cols, col_mask, 0, H, K_PAD)
    zero = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    t = 0
    while t < T:
        h = _mma(_load_rows(h_buf_ptr + t * plane, H, rows, row_mask, 0, H, K_PAD), w, zero, PRECISION, UPCAST)
        out = h_buf_ptr + (t + 1) * plane + rows[:, None] * H + cols[None, :]
        tl.store(out, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        _grid_barrier(counter_ptr, tl.num_programs(0) * (t + 1))
        t += 1


@triton.jit(do_not_specialize=["T"])
def _barrier_check_kernel(slots_ptr, errors_ptr, counter_ptr, T, NUM_SLOTS: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.num_programs(0)
    others = tl.arange(0, NUM_SLOTS)
    t = 0
    while t < T:
        tl.store(slots_ptr + pid, t + 1)
        _grid_barrier(counter_ptr, n * (t + 1))
        # Every program has finished step t: all slots hold t+1 or (a faster program) more.
        seen = tl.load(slots_ptr + others, mask=others < n, other=T + 1, volatile=True)
        behind = tl.sum((seen < t + 1).to(tl.int32), axis=0)
        tl.atomic_add(errors_ptr, behind)
        t += 1


def barrier_floor(num_programs: int, seq_len: int, device) -> torch.Tensor:
    """Launch ``num_programs`` programs meeting ``seq_len`` times; returns the counter
    (``num_programs * seq_len`` when every arrival was counted)."""
    counter = torch.zeros(1, dtype=torch.int32, device=device)
    _barrier_floor_kernel[(num_programs,)](counter, seq_len)
    return counter


def dot_floor(h_buf: torch.Tensor, w: torch.Tensor, block_h: int, precision: str = "ieee",
              upcast: bool = False) -> torch.Tensor:
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` the start) is filled with ``h_{t+1} = h_t w^T`` for
    ``w [H, H]``, one program per ``block_h`` hidden units; returns ``h_buf``."""
    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    counter = torch.zeros(1, dtype=torch.int32, device=h_buf.device)
    grid = (triton.cdiv(H, block_h),)
    _dot_floor_kernel[grid](h_buf, w, counter, T, B, H=H, BLOCK_B=max(16, next_pow2(B)), BLOCK_H=block_h,
                            K_PAD=max(16, next_pow2(H)), PRECISION=precision, UPCAST=upcast)
    return h_buf


def barrier_check(num_programs: int, seq_len: int, device) -> int:
    """Run :func:`_barrier_check_kernel`; returns the number of stale slots seen (0 if correct)."""
    slots = torch.zeros(num_programs, dtype=torch.int32, device=device)
    errors = torch.zeros(1, dtype=torch.int32, device=device)
    counter = torch.zeros(1, dtype=torch.int32, device=device)
    _barrier_check_kernel[(num_programs,)](slots, errors, counter, seq_len, NUM_SLOTS=max(16, next_pow2(num_programs)))
    return int(errors.item())
