"""Our tile products (``ops/products.py``) against cuBLAS on the GPU, at the seed suites' shapes:
the input projection (``ops/projection.our_projection`` against ``F.linear``) and a layer's weight,
bias and input gradients (``ops/gradients.layer_gradients`` against ``reference_gradients``, the
torch calls), each tiling timed as device time.

    python benchmarks/products.py OUT_DIR [--parts projection,gradients] [--case-budget S] [--budget S]

Each variant (:class:`~rnnbench.ops.products.Tiles`: ``bm x bn x bk``, warps, stages; ``masked``
= the unmasked path refused, where the shape would allow it) is first checked against float64 on
the same operands, then timed: a CUDA graph of :data:`CALLS` calls (no host time), replayed
under ``rnnbench.timing.measure``; µs per call. Strict fp32 runs 3xTF32 (``tf32x3``), TF32 plain
TF32, bf16 fp32-accumulated products, as the lanes do. ``--device cpu`` (with
``TRITON_INTERPRET=1``) only checks this script, on one small case of each part, each call timed once.

Writes ``OUT_DIR/products.jsonl`` (the environment record, then one row per case: ``us_cublas``,
and ``us_<variant>`` with ``error_<variant>`` for each tiling) and prints a table.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ab import parser as ab_parser, run_cases  # noqa: E402

CALLS = 20
# Projection cases, (rows = T*B, G*H, input, dtype): glample's LSTM and RNN at hidden 100 and
# LSTM at 500, theano's GRU and LSTM at batch 32 and hidden 128, its LSTM at batch 128, hidden
# 128, and at batch 32, hidden 512 (past PROJECTION_MAX_FLOP now: F.linear's).
PROJECTION_CASES = [(600, 400, 100, "fp32"), (600, 100, 100, "fp32"), (600, 2000, 100, "fp32"),
                    (960, 384, 128, "fp32"), (960, 512, 128, "fp32"), (3840, 512, 128, "fp32"),
                    (960, 2048, 512, "fp32"), (960, 512, 128, "tf32"), (3840, 512, 128, "tf32"),
                    (960, 2048, 512, "tf32"), (960, 512, 128, "bf16"), (3840, 512, 128, "bf16"),
                    (960, 1536, 512, "bf16"), (960, 2048, 512, "bf16")]
# Gradient cases, (rows = T*B, gates, input, hidden, dtype): glample's LSTM at hidden 100, theano's
# LSTM and GRU at batch 32, hidden 128, its LSTM at batch 128, hidden 128 and at batch 32, hidden
# 512 (the last two past FUSED_MAX_FLOP now: the torch calls').
GRADIENT_CASES = [(600, 4, 100, 100, "fp32"), (960, 4, 128, 128, "fp32"), (960, 3, 128, 128, "fp32"),
                  (3840, 4, 128, 128, "fp32"), (960, 4, 512, 512, "fp32"), (960, 4, 128, 128, "tf32"),
                  (3840, 4, 128, 128, "tf32"), (960, 4, 128, 128, "bf16"), (3840, 4, 128, 128, "bf16"),
                  (960, 4, 512, 512, "bf16")]
PARTS = {"projection": PROJECTION_CASES, "gradients": GRADIENT_CASES}
# ``--device cpu`` checks the script on one small case of each part (the interpreter is slow).
CPU_CASES = {"projection": [(64, 128, 64, "fp32")], "gradients": [(64, 4, 32, 32, "fp32")]}


def variants() -> dict:
    """The tilings compared, by name: the defaults of both launches, each also masked, and others."""
    from rnnbench.ops import gradients, projection
    from rnnbench.ops.products import Tiles

    tilings = [projection.TILES, projection.EVEN_TILES, gradients.FP32_TILES, gradients.HALF_TILES,
               Tiles(32, 32, 32, 4, 2), Tiles(64, 64, 32, 4, 2), Tiles(128, 64, 32, 4, 3), Tiles(64, 128, 32, 4, 3),
               Tiles(128, 128, 32, 8, 3), Tiles(128, 64, 64, 8, 3)]
    named = {}
    for t in tilings:
        named[f"{t.bm}x{t.bn}x{t.bk}w{t.num_warps}s{t.num_stages}"] = t
    for t in (projection.TILES, projection.EVEN_TILES):
        named[f"{t.bm}x{t.bn}x{t.bk}w{t.num_warps}s{t.num_stages}-masked"] = Tiles(t.bm, t.bn, t.bk, t.num_warps,
                                                                                   t.num_stages, even=False)
    return named


def _timed_us(fn, device: str, budget_s: float) -> float:
    """µs per call of ``fn``: on CUDA, a graph of CALLS calls replayed (device time only)."""
    from rnnbench.timing import measure, time_call
    from rnnbench.workload import graphed

    if device == "cpu":
        return time_call(fn, device)[1] * 1e3
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, device, budget_s=budget_s).median_ms * 1e3 / CALLS


@contextlib.contextmanager
def _any_size():
    """``layer_gradients`` takes its launch whatever the layer's size (the comparison's cases go
    past ``FUSED_MAX_FLOP``)."""
    from rnnbench.ops import gradients

    saved = gradients.FUSED_MAX_FLOP
    gradients.FUSED_MAX_FLOP = float("inf")  # (fused() takes either limit)
    try:
        yield
    finally:
        gradients.FUSED_MAX_FLOP = saved


def _operands(sizes: list[tuple], dtype, device):
    import torch

    gen = torch.Generator().manual_seed(0)
    return [(torch.randn(size, generator=gen) / size[-1] ** 0.5).to(device=device, dtype=dtype) for size in sizes]


def measure_projection(rows, width, inputs, dtype, budget_s, device) -> dict:
    import torch
    from torch.nn import functional as F

    from rnnbench.ops.plans import dot_precision, upcast_dot
    from rnnbench.ops.projection import our_projection
    from rnnbench.precision import TORCH_DTYPE, matmul_mode
    from rnnbench.verify import relative_error

    torch_dtype = TORCH_DTYPE[dtype]
    x, w = _operands([(rows, 1, inputs), (width, inputs)], torch_dtype, device)
    reference = x.double() @ w.double().t()
    row = dict(part="projection", rows=rows, width=width, inputs=inputs, dtype=dtype)
    with matmul_mode(dtype):
        precision, upcast = dot_precision(torch_dtype), upcast_dot(torch_dtype)
        row["error_cublas"] = relative_error(F.linear(x, w), reference)
        row["us_cublas"] = _timed_us(lambda: F.linear(x, w), device, budget_s)
        for name, tiles in variants().items():
            row[f"error_{name}"] = relative_error(our_projection(x, w, precision, upcast, tiles), reference)
            row[f"us_{name}"] = _timed_us(lambda: our_projection(x, w, precision, upcast, tiles), device, budget_s)
    return row


def measure_gradients(rows, gates, inputs, hidden, dtype, budget_s, device) -> dict:
    from rnnbench.ops.gradients import layer_gradients, reference_gradients
    from rnnbench.ops.plans import dot_precision, upcast_dot
    from rnnbench.precision import TORCH_DTYPE, matmul_mode
    from rnnbench.verify import relative_error

    torch_dtype = TORCH_DTYPE[dtype]
    width = gates * hidden
    d_gx, d_gh, x, h, w = _operands([(rows, width), (rows, width), (rows, inputs), (rows, hidden), (width, inputs)],
                                    torch_dtype, device)
    d_gh = d_gx if gates != 3 else d_gh  # one gate-gradient tensor except for the GRU
    need = (True,) * 5
    wide = [t.double() for t in (d_gx, d_gh, x, h, w)]
    reference = reference_gradients(wide[0], wide[0] if d_gh is d_gx else wide[1], *wide[2:], need)

    def error(got) -> float:
        return max(relative_error(getattr(got, f), getattr(reference, f)) for f in ("dx", "dw_ih", "dw_hh", "db_ih"))

    row = dict(part="gradients", rows=rows, gates=gates, inputs=inputs, hidden=hidden, dtype=dtype)
    with matmul_mode(dtype), _any_size():
        precision, upcast = dot_precision(torch_dtype), upcast_dot(torch_dtype)
        row["error_cublas"] = error(reference_gradients(d_gx, d_gh, x, h, w, need))
        row["us_cublas"] = _timed_us(lambda: reference_gradients(d_gx, d_gh, x, h, w, need), device, budget_s)
        for name, tiles in variants().items():
            call = lambda: layer_gradients(d_gx, d_gh, x, h, w, need, precision, upcast, tiles)  # noqa: E731
            row[f"error_{name}"] = error(call())
            row[f"us_{name}"] = _timed_us(call, device, budget_s)
    return row


def _table(rows: list[dict]) -> str:
    names = list(variants())
    head = "case | cuBLAS µs | " + " | ".join(names)
    lines = [head, " | ".join("---" for _ in head.split(" | "))]
    for r in rows:
        case = (f"{r['part']} {r['rows']}x{r['width']}x{r['inputs']}" if r["part"] == "projection" else
                f"{r['part']} N{r['rows']} G{r['gates']} I{r['inputs']} H{r['hidden']}") + f" {r['dtype']}"
        if "error" in r:
            lines.append(f"{case} | {r['error']}")
            continue
        lines.append(f"{case} | {r['us_cublas']:.1f} | " + " | ".join(f"{r[f'us_{n}']:.1f}" for n in names))
    return "\n".join(lines)


def main() -> int:
    parser = ab_parser(__doc__, 420.0)
    parser.add_argument("--parts", default="projection,gradients", help="comma list of: " + ", ".join(PARTS))
    parser.add_argument("--cases", type=int, default=0, help="only the first N cases of each part (0: all)")
    args = parser.parse_args()
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}; choose from {', '.join(PARTS)}")
    tables = CPU_CASES if args.device == "cpu" else PARTS
    cases = [(part, *case) for part in parts for case in (tables[part][:args.cases] if args.cases else tables[part])]
    measure = {"projection": measure_projection, "gradients": measure_gradients}
    rows = run_cases(args.out_dir / "products.jsonl", cases, ("part", "rows"),
                     lambda case: measure[case[0]](*case[1:], args.case_budget, args.device), args.budget)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
