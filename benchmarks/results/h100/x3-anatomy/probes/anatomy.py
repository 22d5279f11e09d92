"""Where a streamed strict fp32 (3xTF32) forward step goes at 64 batch rows a program.

    PYTHONPATH=src python3 benchmarks/results/h100/x3-anatomy/probes/anatomy.py OUT.json

A stand-in for the split-once forward step of ``ops/common._split_stacked_matmul`` (64-row
stacked tile of 16 units, 64 batch rows, 32-wide chunks, six in flight, 4 warps, the grid
barrier each step), with its operands' remainders taken away or narrowed one at a time:
``h_lo`` 0 none (h's high part read twice), 1 an fp32 plane (as now), 2 an fp16 plane under a
fixed scale; ``w_lo`` 0 none, 1 the fp32 copy (as now at 64 rows), 2 an fp16 copy under each
row's power of two, 3 split in registers from W itself; ``products`` 3 (3xTF32) or 1 (the high
parts alone); ``barrier`` off lets every program run ahead (timing only). Values are not checked
(the variants without a remainder are wrong by design); the real forward kernels of the LSTM and
GRU at the same shape are timed beside them. Per step: graphed at 32 and 64 steps, the difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from rnnbench.ops.common import _act_tanh, _grid_barrier, _mma_split, _release_counters, _split_gates, _split_tf32, _stacked_rows  # noqa: E402

H16_SCALE = 2.0 ** 24


@triton.jit(do_not_specialize=["T", "B"])
def _step_kernel(ex_ptr, ex16_ptr, w_hi_ptr, w_lo_ptr, w16_ptr, w_inv_ptr, counters_ptr, T, B,
                 H: tl.constexpr, GATES: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr,
                 BLOCK_K: tl.constexpr, H_LO: tl.constexpr, W_LO: tl.constexpr, PRODUCTS: tl.constexpr,
                 BARRIER: tl.constexpr):
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    units = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B
    mask = (units < H)[:, None] & row_mask[None, :]
    hid = rows[None, :] * H + units[:, None]
    plane = B.to(tl.int64) * H
    w_rows, w_valid = _stacked_rows(pid_h, H, GATES, 4, BLOCK_H)
    w_inv = tl.load(w_inv_ptr + w_rows, mask=w_valid, other=0.0)
    t = 0
    while t < T:
        slot = ex_ptr + (t % 2) * (2 * plane)
        slot16 = ex16_ptr + (t % 2) * plane
        acc = tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32)
        small = tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32)
        for k0 in range(0, H, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            h_off = rows[:, None] * H + k[None, :]
            h_hi = tl.load(slot + h_off, mask=row_mask[:, None], other=0.0, cache_modifier=".cg")
            if H_LO == 1:
                h_lo = tl.load(slot + plane + h_off, mask=row_mask[:, None], other=0.0, cache_modifier=".cg")
            elif H_LO == 2:
                h_lo = tl.load(slot16 + h_off, mask=row_mask[:, None], other=0.0,
                               cache_modifier=".cg").to(tl.float32) * (1.0 / 16777216.0)
            else:
                h_lo = h_hi
            w_off = w_rows[:, None] * H + k[None, :]
            if W_LO == 3:
                w_hi, w_lo = _split_tf32(tl.load(w_hi_ptr + w_off, mask=w_valid[:, None], other=0.0))
            else:
                w_hi = tl.load(w_hi_ptr + w_off, mask=w_valid[:, None], other=0.0)
                if W_LO == 1:
                    w_lo = tl.load(w_lo_ptr + w_off, mask=w_valid[:, None], other=0.0)
                elif W_LO == 2:
                    w_lo = tl.load(w16_ptr + w_off, mask=w_valid[:, None], other=0.0).to(tl.float32) * w_inv[:, None]
                else:
                    w_lo = w_hi
            if PRODUCTS == 3:
                acc, small = _mma_split(w_hi, w_lo, tl.trans(h_hi), tl.trans(h_lo), acc, small)
            else:
                acc = tl.dot(w_hi, tl.trans(h_hi), acc, input_precision="tf32")
        g0, _, _, _ = _split_gates(acc + small, BLOCK_H, BLOCK_B)
        h = _act_tanh(g0, True)
        nxt = (t + 1) % 2
        hi, lo = _split_tf32(h)
        tl.store(ex_ptr + nxt * (2 * plane) + hid, hi, mask=mask)
        if H_LO == 1:
            tl.store(ex_ptr + nxt * (2 * plane) + plane + hid, lo, mask=mask)
        elif H_LO == 2:
            tl.store(ex16_ptr + nxt * plane + hid, (lo * 16777216.0).to(tl.float16), mask=mask)
        if BARRIER:
            if t + 1 < T:
                _grid_barrier(counters_ptr + pid_b, tl.num_programs(0) * (t + 1))
        t += 1
    if BARRIER:
        _release_counters(counters_ptr)


@triton.jit(do_not_specialize=["T", "B"])
def _fp16_step_kernel(ex_ptr, w_ptr, w_inv_ptr, counters_ptr, T, B, H: tl.constexpr, GATES: tl.constexpr,
                      BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr, PRODUCTS: tl.constexpr):
    """3xFP16: every operand an fp16 high part and an fp16 remainder times 2^11 (as the on-chip
    RNN's ``Plan.on_chip_split == "fp16"``): ``ex`` ``[2 slots, 2 planes, B, H]``, ``w``
    ``[2 planes, G*H, H]``; the small products summed apart and scaled back, the rows' scales after."""
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    units = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rows = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    row_mask = rows < B
    mask = (units < H)[:, None] & row_mask[None, :]
    hid = rows[None, :] * H + units[:, None]
    plane = B.to(tl.int64) * H
    w_plane = GATES * H * H
    w_rows, w_valid = _stacked_rows(pid_h, H, GATES, 4, BLOCK_H)
    w_inv = tl.load(w_inv_ptr + w_rows, mask=w_valid, other=0.0)
    t = 0
    while t < T:
        slot = ex_ptr + (t % 2) * (2 * plane)
        acc = tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32)
        small = tl.zeros([4 * BLOCK_H, BLOCK_B], dtype=tl.float32)
        for k0 in range(0, H, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            h_off = rows[:, None] * H + k[None, :]
            w_off = w_rows[:, None] * H + k[None, :]
            h_hi = tl.load(slot + h_off, mask=row_mask[:, None], other=0.0, cache_modifier=".cg")
            w_hi = tl.load(w_ptr + w_off, mask=w_valid[:, None], other=0.0)
            if PRODUCTS == 3:
                h_lo = tl.load(slot + plane + h_off, mask=row_mask[:, None], other=0.0, cache_modifier=".cg")
                w_lo = tl.load(w_ptr + w_plane + w_off, mask=w_valid[:, None], other=0.0)
                small = tl.dot(w_lo, tl.trans(h_hi), small)
                small = tl.dot(w_hi, tl.trans(h_lo), small)
            acc = tl.dot(w_hi, tl.trans(h_hi), acc)
        acc = (acc + small * (1.0 / 2048.0)) * w_inv[:, None]
        g0, _, _, _ = _split_gates(acc, BLOCK_H, BLOCK_B)
        h = _act_tanh(g0, True) * 16384.0
        hi = h.to(tl.float16)
        lo = ((h - hi.to(tl.float32)) * 2048.0).to(tl.float16)
        nxt = ex_ptr + ((t + 1) % 2) * (2 * plane)
        tl.store(nxt + hid, hi, mask=mask)
        tl.store(nxt + plane + hid, lo, mask=mask)
        if t + 1 < T:
            _grid_barrier(counters_ptr + pid_b, tl.num_programs(0) * (t + 1))
        t += 1
    _release_counters(counters_ptr)


def fp16_runner(T, B, H, gates, products, block_b=64, block_h=16, block_k=64, stages=4, warps=4):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    w = torch.randn(gates * H, H, device=dev, generator=g) * H ** -0.5
    scale = torch.exp2(14 - torch.floor(torch.log2(w.abs().amax(dim=1))))
    ws = w * scale[:, None]
    hi = ws.half()
    w16 = torch.stack([hi, ((ws - hi.float()) * 2048).half()]).contiguous()
    w_inv = (1.0 / scale).float().contiguous()
    ex = torch.zeros(2, 2, B, H, device=dev, dtype=torch.float16)
    ex[0, 0] = ((torch.rand(B, H, device=dev, generator=g) - 0.5) * 16384).half()
    counters = torch.zeros(4, dtype=torch.int32, device=dev)
    grid = (H // block_h, triton.cdiv(B, block_b))

    def run():
        _fp16_step_kernel[grid](ex, w16, w_inv, counters, T, B, H=H, GATES=gates, BLOCK_B=block_b, BLOCK_H=block_h,
                                BLOCK_K=block_k, PRODUCTS=products, num_warps=warps, num_stages=stages)
    return run


def variant_runner(T, B, H, gates, h_lo, w_lo, products, barrier, block_b=64, block_h=16, block_k=32, stages=6,
                   warps=4):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    w = torch.randn(gates * H, H, device=dev, generator=g) * H ** -0.5
    w_hi = w.view(torch.int32).add(0x1000).bitwise_and(-8192).view(torch.float32)
    w_rem = w - w_hi
    m = w_rem.abs().amax(dim=1).clamp_min(2.0 ** -100)
    scale = torch.exp2(14 - torch.floor(torch.log2(m)))
    w16 = (w_rem * scale[:, None]).half()
    w_inv = (1.0 / scale).float().contiguous()
    ex = torch.zeros(2, 2, B, H, device=dev)
    ex[0, 0] = torch.rand(B, H, device=dev, generator=g) - 0.5
    ex16 = torch.zeros(2, B, H, device=dev, dtype=torch.float16)
    counters = torch.zeros(4, dtype=torch.int32, device=dev)
    grid = (H // block_h, triton.cdiv(B, block_b))

    def run():
        _step_kernel[grid](ex, ex16, w if w_lo == 3 else w_hi, w_rem, w16, w_inv, counters, T, B, H=H, GATES=gates,
                           BLOCK_B=block_b, BLOCK_H=block_h, BLOCK_K=block_k, H_LO=h_lo, W_LO=w_lo,
                           PRODUCTS=products, BARRIER=barrier, num_warps=warps, num_stages=stages)
    return run


VARIANTS = {  # name: (h_lo, w_lo, products, barrier)
    "as now (copy)": (1, 1, 3, True),
    "w split in step": (1, 3, 3, True),
    "w_lo fp16": (1, 2, 3, True),
    "h_lo fp16": (2, 1, 3, True),
    "both lo fp16": (2, 2, 3, True),
    "no h_lo": (0, 1, 3, True),
    "no w_lo": (1, 0, 3, True),
    "no lo": (0, 0, 3, True),
    "1 product, no lo": (0, 0, 1, True),
    "as now, no barrier": (1, 1, 3, False),
}

FP16_VARIANTS = {  # name: fp16_runner keywords
    "3xfp16 k64 s4": dict(products=3),
    "3xfp16 k32 s6": dict(products=3, block_k=32, stages=6),
    "3xfp16 k64 s6": dict(products=3, stages=6),
    "1xfp16 k64 s4": dict(products=1),
}


def main() -> int:
    from triton_dev import _graph_ms, _kernel_alone
    from rnnbench.ops.recurrence import NUM_GATES
    from rnnbench.precision import matmul_mode

    out = Path(sys.argv[1])
    B, H, short, long = 128, 1024, 32, 64
    rows = []
    for gates in (4, 3):
        for name, (h_lo, w_lo, products, barrier) in VARIANTS.items():
            t = [_graph_ms(variant_runner(n, B, H, gates, h_lo, w_lo, products, barrier)) for n in (short, long)]
            rows.append(dict(form="probe", gates=gates, variant=name, us_per_step=1e3 * (t[1] - t[0]) / (long - short)))
            print(f"gates {gates}  {name:22s} {rows[-1]['us_per_step']:7.2f} us/step", flush=True)
        for name, kw in FP16_VARIANTS.items():
            t = [_graph_ms(fp16_runner(n, B, H, gates, **kw)) for n in (short, long)]
            rows.append(dict(form="probe", gates=gates, variant=name, us_per_step=1e3 * (t[1] - t[0]) / (long - short)))
            print(f"gates {gates}  {name:22s} {rows[-1]['us_per_step']:7.2f} us/step", flush=True)
    dev = torch.device("cuda")
    with matmul_mode("fp32"):
        for cell in ("lstm", "gru"):
            gates = NUM_GATES[cell]
            g = torch.Generator(device=dev).manual_seed(0)
            w_hh = torch.randn(gates * H, H, device=dev, generator=g) * H ** -0.5
            b_ih = torch.randn(gates * H, device=dev, generator=g) * 0.1
            x_proj = torch.randn(2 * long, B, gates * H, device=dev, generator=g)
            t = [_graph_ms(_kernel_alone(cell, B, n, H, torch.float32, "tf32x3", x_proj, w_hh, b_ih, b_ih))
                 for n in (short, long)]
            rows.append(dict(form="real forward", gates=gates, variant=cell, us_per_step=1e3 * (t[1] - t[0]) / (long - short)))
            print(f"real {cell:5s} {rows[-1]['us_per_step']:7.2f} us/step", flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), triton=triton.__version__, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
