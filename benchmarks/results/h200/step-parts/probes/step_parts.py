"""Where the sliced LSTM forward's step goes outside its product: a stand-in step with each of the
cell's parts on or off (one GPU, kernels alone).

    PYTHONPATH=src python3 benchmarks/results/h200/step-parts/probes/step_parts.py OUT_DIR
    TRITON_INTERPRET=1 PYTHONPATH=src python3 .../step_parts.py OUT_DIR --device cpu   # the logic only

Why: at batch 1024, hidden 2048 in bf16 the product alone takes 56 µs a step (``../tma-step``) and
the sliced forward that does not save 85.6 (``../input-first/e6c42d7``); loading the input before
the product did not take the difference. The stand-in runs the default plan's tile (128 rows, 128
units, 2 slices, 32-wide chunks, 4 stages, 8 warps; 64 units at hidden 1024) through the sliced
forward's product (``lstm.pieces._slice_product``) and then, per slice,

- ``X``: the step's input projection, four gates' ``[SLICE, BLOCK_B]`` bf16 tiles, added to the
  gates (as ``lstm_forward_pieces_kernel`` loads it: after the product);
- ``C``: the cell state from memory (fp32, read from one of two slots, written to the other);
- ``A``: the LSTM's activations (sigmoid of i, f, o, tanh of g and of c, ``tanh.approx`` as the
  kernel's fast activations) and its cell update; off: h is the gates' sum through one ``tanh.approx``;

then stores h_t (bf16) and meets the batch block's barrier. Every combination, and the sliced forward
itself (``recurrence_forward``, no save) on the same shape, as µs a step (the difference of 30 and 60
steps replayed from a CUDA graph, over 30). Each stand-in's h_T is checked against float32 torch
first. Writes ``OUT_DIR/step_parts.jsonl`` (an environment record first; ``ab.run_cases``, since after
its runs) and prints each row.

``--second``: the first run's product-only step took 68.9 µs at 1024 x 2048 where ``../tma-step``'s
pointer kernel took 56.0 (another lease). Their differences are h_t's store offsets (int64 here, as
the kernels form them; int32 there) and the tanh (``tanh.approx`` here, a sigmoid's there); this run
times the product-only and full steps with int32 offsets and the exact tanh, and that kernel, in one
run (``SECOND``; ``OUT_DIR/step_parts_second.jsonl``).
"""

from __future__ import annotations

import functools
import itertools
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from rnnbench.ops.common import _act_sigmoid, _act_tanh, _arrive, _load_f32, _release_counters, _wait  # noqa: E402
from rnnbench.ops.lstm.pieces import _at, _slice_product  # noqa: E402

SEQ_LEN = 30
# (batch, hidden, block_b, block_h, pieces, block_k): the LSTM's default sliced forward plans in bf16 on
# 132 multiprocessors (plans.choose_plan at 2ef3c4b)
CASES = [(1024, 2048, 128, 128, 2, 32), (512, 4096, 128, 128, 2, 32)]
FIELDS = ("batch_size", "hidden_size", "block_b", "block_h", "pieces", "block_k")


@triton.jit(do_not_specialize=["T", "B"])
def step_parts_kernel(h_buf_ptr, w_ptr, x_ptr, c_ptr, counters_ptr, T, B, H: tl.constexpr, BLOCK_B: tl.constexpr,
                      BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, PIECES: tl.constexpr, X: tl.constexpr,
                      C: tl.constexpr, A: tl.constexpr, FAST: tl.constexpr, NARROW: tl.constexpr = False):
    """``h_buf [T+1, B, H]`` (``h_buf[0]`` the start), ``W_hh [4H, H]``, ``x [T, B, 4H]``, ``c [2, B, H]``
    fp32 (slot 0 the start): the module docstring's step with parts ``X``, ``C``, ``A``; ``NARROW``: h_t
    stored through int32 offsets (``t * B * H`` under 2^31 here) instead of the kernels' int64 ones."""
    SLICE: tl.constexpr = BLOCK_H // PIECES
    pid_h = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B
    wide_b = B.to(tl.int64)
    counter = counters_ptr + tl.program_id(1)
    t = 0
    while t < T:
        row_t = wide_b * t + rows
        for p in tl.static_range(PIECES):
            units = (pid_h * PIECES + p) * SLICE + tl.arange(0, SLICE)
            mask = (units < H)[:, None] & row_mask[None, :]
            a_i, a_f, a_g, a_o = _slice_product(pid_h, p, 4, w_ptr, h_buf_ptr + wide_b * t * H, rows, row_mask, H, H,
                                                BLOCK_K, H // BLOCK_K, "tf32", False, SLICE, BLOCK_B, PIECES)
            if X:
                x_g = _at(row_t, units, 4 * H)
                a_i += _load_f32(x_ptr, x_g + 0 * H, mask)
                a_f += _load_f32(x_ptr, x_g + 1 * H, mask)
                a_g += _load_f32(x_ptr, x_g + 2 * H, mask)
                a_o += _load_f32(x_ptr, x_g + 3 * H, mask)
            if A:
                i = _act_sigmoid(a_i, FAST)
                f = _act_sigmoid(a_f, FAST)
                g = _act_tanh(a_g, FAST)
                o = _act_sigmoid(a_o, FAST)
                if C:
                    c = f * _load_f32(c_ptr, _at(wide_b * (t % 2) + rows, units, H), mask) + i * g
                else:
                    c = i * g
                h = o * _act_tanh(c, FAST)
            else:
                s = a_i + a_f + a_g + a_o
                if C:
                    c = s + _load_f32(c_ptr, _at(wide_b * (t % 2) + rows, units, H), mask)
                else:
                    c = s
                h = _act_tanh(c, FAST)
            if C:
                tl.store(c_ptr + _at(wide_b * ((t + 1) % 2) + rows, units, H), c, mask=mask)
            if NARROW:
                tl.store(h_buf_ptr + (t + 1) * B * H + rows[None, :] * H + units[:, None],
                         h.to(h_buf_ptr.dtype.element_ty), mask=mask)
            else:
                tl.store(h_buf_ptr + _at(row_t + B, units, H), h.to(h_buf_ptr.dtype.element_ty), mask=mask)
        if t + 1 < T:
            _arrive(counter)
            _wait(counter, tl.num_programs(0) * (t + 1))
        t += 1
    _release_counters(counters_ptr)


def make(b, h, steps, device, seed=0):
    """``(h_buf, W_hh, x, c)``: bf16 on CUDA, fp16 on the CPU (as ``../tma-step``'s probe), c fp32 [2, B, H];
    the gates' rows at 0.25 H^-1/2 so that the step contracts and h_T compares stably."""
    dtype = torch.bfloat16 if device == "cuda" else torch.float16
    gen = torch.Generator(device=device).manual_seed(seed)
    w = (torch.randn(4 * h, h, device=device, generator=gen) * 0.25 * h ** -0.5).to(dtype)
    h_buf = torch.zeros(steps + 1, b, h, device=device, dtype=dtype)
    h_buf[0] = torch.randn(b, h, device=device, generator=gen).to(dtype)
    x = (torch.randn(steps, b, 4 * h, device=device, generator=gen) * 0.5).to(dtype)
    c = torch.zeros(2, b, h, device=device)
    c[0] = torch.randn(b, h, device=device, generator=gen) * 0.5
    return h_buf, w, x, c


def reference(h_buf, w, x, c, parts):
    """h_T in float32 from the same values, each h_t rounded as the kernel stores it."""
    H, (X, C, A) = h_buf.shape[2], parts
    h, cell = h_buf[0].float(), c[0].clone()
    for t in range(h_buf.shape[0] - 1):
        gates = h @ w.float().t() + (x[t].float() if X else 0.0)
        a_i, a_f, a_g, a_o = gates.split(H, dim=1)
        if A:
            new_c = torch.sigmoid(a_i) * torch.tanh(a_g) + (torch.sigmoid(a_f) * cell if C else 0.0)
            h = torch.sigmoid(a_o) * torch.tanh(new_c)
        else:
            new_c = a_i + a_f + a_g + a_o + (cell if C else 0.0)
            h = torch.tanh(new_c)
        cell = new_c
        h = h.to(h_buf.dtype).float()
    return h


def stand_in(tensors, case, parts, fast=True, narrow=False):
    h_buf, w, x, c = tensors
    b, h, block_b, block_h, pieces, block_k = case
    nb = triton.cdiv(b, block_b)
    counters = torch.zeros(2 * nb, dtype=torch.int32, device=h_buf.device)
    X, C, A = parts

    def run():
        step_parts_kernel[(triton.cdiv(h, block_h), nb)](
            h_buf, w, x, c, counters, h_buf.shape[0] - 1, b, H=h, BLOCK_B=block_b, BLOCK_H=block_h, BLOCK_K=block_k,
            PIECES=pieces, X=X, C=C, A=A, FAST=fast and h_buf.is_cuda, NARROW=narrow, num_warps=8, num_stages=4)
        return h_buf

    return run


def forward_kernel(b, h, steps):
    """The sliced forward itself, no save (the engine's default plan), on ``triton_dev.kernel_tensors``."""
    from triton_dev import _kernel_alone, kernel_tensors

    w_hh, bias, x32 = kernel_tensors("lstm", b, h, torch.bfloat16, steps)
    return _kernel_alone("lstm", b, steps, h, torch.bfloat16, "ieee", x32.to(torch.bfloat16), w_hh, bias, bias)


def name(parts) -> str:
    return "".join(k for k, on in zip("XCA", parts) if on) or "product"


# ``--second``: the product-only step as this probe's first run had it, with h_t stored through int32
# offsets, with the exact tanh (``common._tanh``), both; the full step with int32 offsets; and
# ``../tma-step``'s pointer kernel (int32 offsets, tanh from a sigmoid) in the same run
SECOND = [("product", (False, False, False), True, False), ("product_narrow", (False, False, False), True, True),
          ("product_exact", (False, False, False), False, False),
          ("product_exact_narrow", (False, False, False), False, True),
          ("XCA", (True, True, True), True, False), ("XCA_narrow", (True, True, True), True, True)]


def measure_second(case, device):
    """The ``--second`` run's row for one case."""
    from triton_dev import form_row

    sys.path.insert(0, str(ROOT / "benchmarks/results/h200/tma-step/probes"))
    import tma_step

    b, h = case[:2]
    row = {"batch_size": b, "hidden_size": h, "seq_len": SEQ_LEN}
    tensors = make(b, h, 4, device)
    for key, parts, fast, narrow in SECOND:
        form_row(row, key, lambda n, parts=parts, fast=fast, narrow=narrow: stand_in(make(b, h, n, device), case,
                                                                                   parts, fast, narrow),
                 reference(*tensors, parts), SEQ_LEN, device == "cuda")
    form_row(row, "tma_step_pointer",
             lambda n: tma_step.run_kernel(*make(b, h, n, device)[:2], case[2], case[3], case[5], case[4], False, 4),
             tma_step.reference(*tensors[:2]), SEQ_LEN, device == "cuda")
    return row


def measure(case, device):
    from triton_dev import form_row, us_per_step

    b, h = case[:2]
    row = {"batch_size": b, "hidden_size": h, "block_b": case[2], "block_h": case[3], "pieces": case[4],
           "block_k": case[5], "seq_len": SEQ_LEN}
    tensors = make(b, h, 4, device)
    for parts in itertools.product((False, True), repeat=3):
        form_row(row, name(parts), lambda n, parts=parts: stand_in(make(b, h, n, device), case, parts),
                 reference(*tensors, parts), SEQ_LEN, device == "cuda")
    if device == "cuda":
        row["forward_kernel_us"] = us_per_step(lambda n: forward_kernel(b, h, n), SEQ_LEN)
    return row


def main(argv: list[str]) -> int:
    from ab import OneLineParser, check_device, run_cases

    p = OneLineParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", type=Path)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--second", action="store_true", help="the second run's variants (SECOND)")
    args = p.parse_args(argv)
    check_device(p, args.device)
    # on the CPU one program (the interpreter runs programs one after another), the tile shrunk to match
    cases = CASES if args.device == "cuda" else [(16, 32, 16, 32, 2, 16)]
    run_cases(args.out_dir / f"step_parts{'_second' if args.second else ''}.jsonl", cases, FIELDS,
              functools.partial(measure_second if args.second else measure, device=args.device), float("inf"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
