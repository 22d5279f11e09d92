"""Kernels that measure the floor under a persistent recurrent step, and check the barrier.

- :func:`barrier_floor`: T grid-wide barriers and nothing else: the exchange cost per step.
- :func:`dot_floor`: per step, the recurrent kernels' matmul (every gate's rows of the program's
  units, weights resident or streamed as the plan says), h read from and written to global
  memory, then the barrier: the cheapest recurrence the program layout allows (no cell, no
  saves, no input projection).
- :func:`chain_floor`: the on-chip step (``Plan.h_on_chip``) taken apart: per step one program's
  matmul of its own h (registers) with the resident stacked tile, and, each optional, the
  activation, the store of ``h_t`` and the add of the step's input (loaded one or two steps
  ahead): what each part of the on-chip step costs.
- :func:`barrier_check`: every program writes the step number into its slot, passes the barrier,
  and counts slots still behind the step: a correct barrier counts zero.

Each returns what it wrote so tests can check it; timing belongs to the caller.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .common import (_grid_barrier, _load_f32, _mma, _release_counters, _resident_stack, _split_gates, _stacked_matmul,
                     _stacked_rows, _tanh, _tanh_approx)
from .plans import cdiv, gates_padded, k_chunks, k_padded, next_pow2


@triton.jit(do_not_specialize=["T"])
def _barrier_floor_kernel(counter_ptr, T):
    t = 0
    while t < T:
        _grid_barrier(counter_ptr, tl.num_programs(0) * (t + 1))
        t += 1


@triton.jit(do_not_specialize=["T", "B"])
def _dot_floor_kernel(h_buf_ptr, w_ptr, counters_ptr, T, B, H: tl.constexpr, GATES: tl.constexpr, GP: tl.constexpr,
                      BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, K_PAD: tl.constexpr,
                      CHUNKS: tl.constexpr, W_RESIDENT: tl.constexpr, PRECISION: tl.constexpr,
                      UPCAST: tl.constexpr):
    """The recurrent kernels' step without the cell: the stacked matmul of every gate (weights as
    the plan keeps them), the first gate's block stored as h_{t+1}, the barrier."""
    pid_h = tl.program_id(0)
    units = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rows = tl.arange(0, BLOCK_B)
    row_mask = rows < B
    mask = (units < H)[:, None] & row_mask[None, :]
    plane = B.to(tl.int64) * H
    w_rows, w_valid = _stacked_rows(pid_h, H, GATES, GP, BLOCK_H)
    if W_RESIDENT:
        w = _resident_stack(w_ptr, w_rows, w_valid, H, BLOCK_K, CHUNKS)
    else:
        w = 0
    t = 0
    while t < T:
        acc = _stacked_matmul(w, w_ptr, w_rows, w_valid, h_buf_ptr + t * plane, rows, row_mask,
                              tl.zeros([GP * BLOCK_H, BLOCK_B], dtype=tl.float32), H, K_PAD, BLOCK_K, CHUNKS,
                              W_RESIDENT, PRECISION, UPCAST)
        if GP == 4:
            out, _, _, _ = _split_gates(acc, BLOCK_H, BLOCK_B)
        else:
            out = acc
        tl.store(h_buf_ptr + (t + 1) * plane + rows[None, :] * H + units[:, None], out.to(h_buf_ptr.dtype.element_ty),
                 mask=mask)
        if t + 1 < T:
            _grid_barrier(counters_ptr, tl.num_programs(0) * (t + 1))
        t += 1
    _release_counters(counters_ptr)


@triton.jit(do_not_specialize=["T", "B"])
def _chain_floor_kernel(x_ptr, h_buf_ptr, w_ptr, T, B, H: tl.constexpr, GATES: tl.constexpr, GP: tl.constexpr,
                        BLOCK_B: tl.constexpr, K_PAD: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                        ACT: tl.constexpr, X_AHEAD: tl.constexpr, STORE: tl.constexpr):
    """One program per ``BLOCK_B`` batch rows holding every unit, as the on-chip kernels do:
    ``h_{t+1} = act(first gate of W_stack @ h_t + x_t)`` with h kept in registers. ``ACT``: 0 none,
    1 our ``_tanh``, 2 ``tanh.approx``; ``X_AHEAD``: 0 no input, 1 or 2 the step's input loaded that
    many steps ahead; ``STORE``: write every ``h_t`` (else only the last)."""
    pid_b = tl.program_id(0)
    units = tl.arange(0, K_PAD)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    mask = (units < H)[:, None] & (rows < B)[None, :]
    hid = rows[None, :] * H + units[:, None]
    plane = B.to(tl.int64) * H
    w_rows, w_valid = _stacked_rows(0, H, GATES, GP, K_PAD)
    w = _resident_stack(w_ptr, w_rows, w_valid, H, K_PAD, 1)
    zero = tl.zeros([GP * K_PAD, BLOCK_B], dtype=tl.float32)
    h = _load_f32(h_buf_ptr, hid, mask)
    x = _load_f32(x_ptr, hid, mask) if X_AHEAD > 0 else 0.0
    x_next = _load_f32(x_ptr + tl.minimum(1, T - 1) * plane, hid, mask) if X_AHEAD > 1 else 0.0
    t = 0
    while t < T:
        acc = _mma(w[0], h.to(w[0].dtype), zero, PRECISION, UPCAST)
        if GP == 4:
            out, _, _, _ = _split_gates(acc, K_PAD, BLOCK_B)
        else:
            out = acc
        if X_AHEAD > 0:
            out = out + x
        if ACT == 1:
            out = _tanh(out)
        elif ACT == 2:
            out = _tanh_approx(out)
        h = out
        if STORE:
            tl.store(h_buf_ptr + (t + 1) * plane + hid, h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if X_AHEAD == 1:
            x = _load_f32(x_ptr + tl.minimum(t + 1, T - 1) * plane, hid, mask)  # (past the end: a repeat)
        elif X_AHEAD == 2:
            x = x_next
            x_next = _load_f32(x_ptr + tl.minimum(t + 2, T - 1) * plane, hid, mask)
        t += 1
    tl.store(h_buf_ptr + T * plane + hid, h.to(h_buf_ptr.dtype.element_ty), mask=mask)


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
              upcast: bool = False, resident: bool = True, block_k: int = 64, num_warps: int = 4,
              num_stages: int = 3) -> torch.Tensor:
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` the start) is filled with ``h_{t+1} = h_t w[:H]^T`` for
    ``w [G*H, H]`` (G gates: the matmul computes all of them, as the recurrent kernels do), one
    program per ``block_h`` hidden units and one batch block; returns ``h_buf``."""
    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    gates = w.shape[0] // H
    counters = torch.zeros(2, dtype=torch.int32, device=h_buf.device)
    grid = (cdiv(H, block_h), 1)
    kp = k_padded(H)
    block_k, chunks = k_chunks(H, block_k)
    _dot_floor_kernel[grid](h_buf, w, counters, T, B, H=H, GATES=gates, GP=gates_padded(gates),
                            BLOCK_B=max(16, next_pow2(B)), BLOCK_H=block_h, BLOCK_K=block_k, K_PAD=kp, CHUNKS=chunks,
                            W_RESIDENT=resident, PRECISION=precision, UPCAST=upcast, num_warps=num_warps,
                            num_stages=num_stages)
    return h_buf


def chain_floor(h_buf: torch.Tensor, w: torch.Tensor, x: torch.Tensor | None = None, act: int = 0, x_ahead: int = 1,
                store: bool = True, precision: str = "ieee", upcast: bool = False, num_warps: int = 4,
                block_b: int = 16) -> torch.Tensor:
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` the start) gets ``h_{t+1} = act(h_t w[:H]^T + x_t)`` for
    ``w [G*H, H]`` (every gate's rows multiplied, as the on-chip kernels do; ``G*H``, padded, at most
    a few hundred rows) and ``x [T, B, H]`` (None: no input, ``x_ahead`` ignored), one program per
    ``block_b`` batch rows; ``act`` 0 (none), 1 (``_tanh``), 2 (``tanh.approx``, CUDA only). With
    ``store`` False only ``h_buf[T]`` is written. Returns ``h_buf``.

    Raises:
        ValueError: ``act`` or ``x_ahead`` out of range.
    """
    if act not in (0, 1, 2) or x_ahead not in (1, 2):
        raise ValueError(f"act must be 0, 1 or 2 and x_ahead 1 or 2, not {act} and {x_ahead}")
    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    gates = w.shape[0] // H
    grid = (cdiv(B, block_b),)
    _chain_floor_kernel[grid](h_buf if x is None else x, h_buf, w, T, B, H=H, GATES=gates, GP=gates_padded(gates),
                              BLOCK_B=block_b, K_PAD=k_padded(H), PRECISION=precision, UPCAST=upcast, ACT=act,
                              X_AHEAD=0 if x is None else x_ahead, STORE=store, num_warps=num_warps)
    return h_buf


def barrier_check(num_programs: int, seq_len: int, device) -> int:
    """Run :func:`_barrier_check_kernel`; returns the number of stale slots seen (0 if correct)."""
    slots = torch.zeros(num_programs, dtype=torch.int32, device=device)
    errors = torch.zeros(1, dtype=torch.int32, device=device)
    counter = torch.zeros(1, dtype=torch.int32, device=device)
    _barrier_check_kernel[(num_programs,)](slots, errors, counter, seq_len, NUM_SLOTS=max(16, next_pow2(num_programs)))
    return int(errors.item())
