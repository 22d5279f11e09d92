"""A large step's product through the Tensor Memory Accelerator (TMA) against the pointer loads of
our sliced forward, and cuBLAS' product of the same size (one GPU, kernels alone).

    PYTHONPATH=src python3 benchmarks/results/h200/tma-step/probes/tma_step.py OUT_DIR
    TRITON_INTERPRET=1 PYTHONPATH=src python3 .../tma_step.py OUT_DIR --device cpu   # the logic only

Why: at batch 1024, hidden 2048 in bf16 the LSTM's sliced forward takes about 89 us a step
(``../half-saved``) and its backward as long, while cuDNN's training step runs each step's product
through cuBLAS at about 700 TFLOP/s (``../train-parts/36e3e26``: six products of 1.7 TFLOP in 14.3
ms), some 49 us a step, and its cell kernels apart. Our product loads ``W_hh``'s rows and h's
chunks with per-thread pointers (``cp.async``, 32-wide chunks to fit 4 stages); cuBLAS' Hopper
kernels load through TMA. This times the step without the cell, as ``floor.dot_floor`` does for
the whole-tile kernels: per step and slice of units the four gates' product of ``W_hh``'s rows and
``h_{t-1}``, ``h_t = tanh(sum of the gates)`` stored, the batch block's grid barrier, with

- ``pointer``: the sliced forward's own product (``lstm.pieces._slice_product``), its plan's tile;
- ``tma``: the same tile, each gate's ``[SLICE, BLOCK_K]`` rows of ``W_hh`` and h's ``[BLOCK_B,
  BLOCK_K]`` chunk loaded by TMA (host-side ``TensorDescriptor``), one accumulator per gate; the
  generic proxy's stores of h ordered before the async proxy's loads of them by
  ``fence.proxy.async.global`` on both sides of the barrier (PTX ISA, "Proxies");
- ``cublas``: ``torch.mm(h, W_hh^T)`` and the tanh of its gates' sum, replayed, the same T steps.

µs a step is the difference of 30 and 60 steps replayed from a CUDA graph, over 30. Before timing,
each kernel's ``h_T`` is checked against float32 torch on the same bf16 values (relative error).
Writes ``OUT_DIR/tma_step.jsonl`` (an environment record first; ``ab.run_cases``, since after its run)
and prints each row.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from rnnbench.ops.common import _arrive, _release_counters, _wait  # noqa: E402
from rnnbench.ops.lstm.pieces import _slice_product  # noqa: E402

SEQ_LEN = 30
# (batch, hidden, block_b, block_h, pieces, pointer block_k): the default plans of the LSTM's sliced
# forward in bf16 on 132 multiprocessors (plans.choose_plan at 2ef3c4b)
CASES = [(1024, 2048, 128, 128, 2, 32), (512, 4096, 128, 128, 2, 32), (1024, 1024, 128, 64, 2, 64),
         (256, 4096, 128, 64, 2, 64)]
FIELDS = ("batch_size", "hidden_size", "block_b", "block_h", "pieces", "block_k")
# the TMA variants tried: (block_k, num_stages, rows_first)
TMA_TILES = [(32, 4, False), (64, 3, False), (64, 4, False), (128, 2, False), (64, 3, True), (64, 4, True),
             (128, 2, True)]


@triton.jit
def _proxy_fence(FENCE: tl.constexpr):
    """Order this thread's generic-proxy accesses to global memory against its async-proxy (TMA)
    ones (``fence.proxy.async.global``, sm_90); nothing under the interpreter."""
    if FENCE:
        tl.inline_asm_elementwise("fence.proxy.async.global; mov.u32 $0, 0;", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)


@triton.jit
def _tma_product(w_desc, h_desc, u0, r0, H: tl.constexpr, BLOCK_K: tl.constexpr, SLICE: tl.constexpr,
                 BLOCK_B: tl.constexpr, ROWS_FIRST: tl.constexpr):
    """The four gates' products of units ``u0 ..`` and h's rows ``r0 ..`` (of the ``[(T+1) B, H]``
    view), every operand loaded by TMA: ``[SLICE, BLOCK_B]`` each, or ``[BLOCK_B, SLICE]`` with
    ``ROWS_FIRST`` (h the left operand: wgmma's M is then the batch rows, so a slice of 32 units,
    under wgmma's 64, still runs on it)."""
    shape: tl.constexpr = [BLOCK_B, SLICE] if ROWS_FIRST else [SLICE, BLOCK_B]
    a_i = tl.zeros(shape, dtype=tl.float32)
    a_f = tl.zeros(shape, dtype=tl.float32)
    a_g = tl.zeros(shape, dtype=tl.float32)
    a_o = tl.zeros(shape, dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        h = h_desc.load([r0, k0])
        if ROWS_FIRST:
            a_i = tl.dot(h, tl.trans(w_desc.load([0 * H + u0, k0])), a_i)
            a_f = tl.dot(h, tl.trans(w_desc.load([1 * H + u0, k0])), a_f)
            a_g = tl.dot(h, tl.trans(w_desc.load([2 * H + u0, k0])), a_g)
            a_o = tl.dot(h, tl.trans(w_desc.load([3 * H + u0, k0])), a_o)
        else:
            a_i = tl.dot(w_desc.load([0 * H + u0, k0]), tl.trans(h), a_i)
            a_f = tl.dot(w_desc.load([1 * H + u0, k0]), tl.trans(h), a_f)
            a_g = tl.dot(w_desc.load([2 * H + u0, k0]), tl.trans(h), a_g)
            a_o = tl.dot(w_desc.load([3 * H + u0, k0]), tl.trans(h), a_o)
    return a_i, a_f, a_g, a_o


@triton.jit(do_not_specialize=["T", "B"])
def step_product_kernel(h_buf_ptr, w_ptr, w_desc, h_desc, counters_ptr, T, B,
                        H: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr,
                        PIECES: tl.constexpr, TMA: tl.constexpr, FENCE: tl.constexpr, ROWS_FIRST: tl.constexpr):
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` the start) gets ``h_{t+1} = tanh(sum_g W_g h_t)`` for
    ``W_hh [4H, H]`` (gates ``g`` its four row blocks), the program's units in ``PIECES`` slices."""
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B
    plane = B.to(tl.int64) * H
    counter = counters_ptr + tl.program_id(1)
    t = 0
    while t < T:
        for p in tl.static_range(PIECES):
            units = (pid_h * PIECES + p) * SLICE + tl.arange(0, SLICE)
            if TMA:
                a_i, a_f, a_g, a_o = _tma_product(w_desc, h_desc, (pid_h * PIECES + p) * SLICE,
                                                  (t * B + tl.program_id(1) * BLOCK_B).to(tl.int32), H, BLOCK_K,
                                                  SLICE, BLOCK_B, ROWS_FIRST)
            else:
                a_i, a_f, a_g, a_o = _slice_product(pid_h, p, 4, w_ptr, h_buf_ptr + t * plane, rows, row_mask, H, H,
                                                    BLOCK_K, H // BLOCK_K, "tf32", False, SLICE, BLOCK_B, PIECES)
            s = a_i + a_f + a_g + a_o
            h_new = 2.0 * tl.sigmoid(2.0 * s) - 1.0  # tanh
            if TMA and ROWS_FIRST:
                mask = row_mask[:, None] & (units < H)[None, :]
                tl.store(h_buf_ptr + (t + 1) * plane + rows[:, None] * H + units[None, :],
                         h_new.to(h_buf_ptr.dtype.element_ty), mask=mask)
            else:
                mask = (units < H)[:, None] & row_mask[None, :]
                tl.store(h_buf_ptr + (t + 1) * plane + rows[None, :] * H + units[:, None],
                         h_new.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if t + 1 < T:
            _proxy_fence(FENCE)
            _arrive(counter)
            _wait(counter, tl.num_programs(0) * (t + 1))
            _proxy_fence(FENCE)
        t += 1
    _release_counters(counters_ptr)


def run_kernel(h_buf, w, block_b, block_h, block_k, pieces, tma, num_stages, rows_first=False, num_warps=8):
    from triton.tools.tensor_descriptor import TensorDescriptor

    T, B, H = h_buf.shape[0] - 1, h_buf.shape[1], h_buf.shape[2]
    slice_ = block_h // pieces
    w_desc = TensorDescriptor.from_tensor(w, [slice_, block_k])
    h_desc = TensorDescriptor.from_tensor(h_buf.view(-1, H), [block_b, block_k])
    nb = triton.cdiv(B, block_b)
    counters = torch.zeros(2 * nb, dtype=torch.int32, device=h_buf.device)
    grid = (triton.cdiv(H, block_h), nb)

    def run():
        step_product_kernel[grid](h_buf, w, w_desc, h_desc, counters, T, B, H=H, BLOCK_B=block_b, BLOCK_H=block_h,
                                  BLOCK_K=block_k, PIECES=pieces, TMA=tma, FENCE=h_buf.is_cuda, ROWS_FIRST=rows_first,
                                  num_warps=num_warps, num_stages=num_stages)
        return h_buf

    return run


def run_cublas(h_buf, w):
    T, H = h_buf.shape[0] - 1, h_buf.shape[2]
    w_t = w.t()

    def run():
        for t in range(T):
            h_buf[t + 1] = torch.tanh(torch.mm(h_buf[t], w_t).view(-1, 4, H).float().sum(1)).to(h_buf.dtype)
        return h_buf

    return run


def reference(h_buf, w):
    """h_T in float32 from the same 16-bit h_0 and W_hh, each h_t rounded to 16 bits as the kernels store it."""
    H = h_buf.shape[2]
    w32, h = w.float(), h_buf[0].float()
    for _ in range(h_buf.shape[0] - 1):
        h = torch.tanh((h @ w32.t()).view(-1, 4, H).sum(1)).to(h_buf.dtype).float()
    return h


def make(b, h, steps, device):
    """``(h_buf [steps+1, B, H], W_hh [4H, H])``, bf16 on CUDA; fp16 on the CPU: in bf16 this probe
    gave an h_1 of 1e11 where torch gives 0.45 under the interpreter (Triton 3.9), both loads alike;
    not looked into (the kernels' own tests run bf16 there)."""
    dtype = torch.bfloat16 if device == "cuda" else torch.float16
    gen = torch.Generator(device=device).manual_seed(0)
    # gates' rows at 0.25 H^-1/2: their sum's map contracts, so h_T compares stably over many steps
    w = (torch.randn(4 * h, h, device=device, generator=gen) * 0.25 * h ** -0.5).to(dtype)
    h_buf = torch.zeros(steps + 1, b, h, device=device, dtype=dtype)
    h_buf[0] = torch.randn(b, h, device=device, generator=gen).to(dtype)
    return h_buf, w


def variants(block_k):
    yield "pointer", False, block_k, 4, False
    for bk, stages, rows_first in TMA_TILES:
        yield f"tma_k{bk}_s{stages}{'_rows' if rows_first else ''}", True, bk, stages, rows_first


def measure(case, device):
    from triton_dev import form_row

    b, h, block_b, block_h, pieces, block_k = case
    row = {"batch_size": b, "hidden_size": h, "block_b": block_b, "block_h": block_h, "pieces": pieces,
           "seq_len": SEQ_LEN}
    expected = reference(*make(b, h, 4, device))
    for name, tma, bk, stages, rows_first in [*variants(block_k), ("cublas", None, None, None, None)]:
        def run_at(n, tma=tma, bk=bk, stages=stages, rows_first=rows_first):
            h_buf, w = make(b, h, n, device)
            if tma is None:
                return run_cublas(h_buf, w)
            return run_kernel(h_buf, w, block_b, block_h, bk, pieces, tma, stages, rows_first)

        form_row(row, name, run_at, expected, SEQ_LEN, device == "cuda")
    return row


def main(argv: list[str]) -> int:
    from ab import OneLineParser, check_device, run_cases

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = p.parse_args(argv)
    check_device(p, args.device)
    # on the CPU one program (the interpreter runs programs one after another: a barrier between
    # several would never be met), with the tile sizes shrunk to match
    cases = CASES if args.device == "cuda" else [(16, 32, 16, 32, 2, 16)]
    run_cases(args.out_dir / "tma_step.jsonl", cases, FIELDS, functools.partial(measure, device=args.device),
              float("inf"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
