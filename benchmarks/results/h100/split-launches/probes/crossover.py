"""Where strict fp32's split products (now two launches a split call, one a product call) overtake
the other paths, for the limits in ``ops/gradients.py`` and ``ops/projection.py``: a layer's three
gradient products by our fused launch (``layer_gradients`` with its limits lifted), by the splits
(``split_gradients``) and by the torch calls; its input projection by our tiles, cuBLAS and the
splits. Per form, device µs a call (CUDA graphs of 10 calls, ``measure``'s median) and host µs a
call issued back to back eagerly (``call-floor/probes/call_floor.host_us``, median of 5 runs of
50 calls); each form checked against float64 first. From the repository root, on a GPU::

    PYTHONPATH=src python3 benchmarks/results/h100/split-launches/probes/crossover.py OUT.jsonl"""
import sys
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).parents[2] / "call-floor" / "probes"))
from call_floor import host_us, write_rows  # noqa: E402

from rnnbench.ops import gradients, projection  # noqa: E402
from rnnbench.precision import matmul_mode  # noqa: E402
from rnnbench.timing import measure  # noqa: E402
from rnnbench.verify import relative_error  # noqa: E402
from rnnbench.workload import graphed  # noqa: E402

CALLS = 10
# (case, batch, steps, gates, input_size, hidden_size): the seed suites' strict fp32 layers
CASES = [("lstm glample H100", 20, 30, 4, 100, 100), ("rnn glample H100", 20, 30, 1, 100, 100),
         ("lstm B32 H128", 32, 30, 4, 128, 128), ("gru B32 H128", 32, 30, 3, 128, 128),
         ("lstm B128 H128", 128, 30, 4, 128, 128), ("gru B128 H128", 128, 30, 3, 128, 128),
         ("lstm glample H500", 20, 30, 4, 100, 500), ("rnn glample H500", 20, 30, 1, 100, 500),
         ("lstm B32 H512", 32, 30, 4, 512, 512), ("gru B32 H512", 32, 30, 3, 512, 512),
         ("lstm B64 T100 H512", 64, 100, 4, 512, 512), ("lstm B128 H512", 128, 30, 4, 512, 512)]


def device_us(fn):
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, "cuda", budget_s=0.3).median_ms * 1e3 / CALLS


def fused(*args):
    gradients.FUSED_MAX_FLOP = float("inf")
    try:
        return gradients.layer_gradients(*args, "tf32x3", False)
    finally:
        gradients.FUSED_MAX_FLOP = FUSED


FUSED = gradients.FUSED_MAX_FLOP


def timed(row, form, fn, check):
    try:
        row[f"error {form}"] = check(fn())
        row[f"us {form}"] = device_us(fn)
        for _ in range(5):
            fn()
        row[f"host {form}"] = sorted(host_us(fn, 50) for _ in range(5))[2]
    except Exception as e:  # noted, the rest go on
        row[f"failed {form}"] = f"{type(e).__name__}: {str(e)[:200]}"


def main(out):
    rows = []
    gen = torch.Generator().manual_seed(0)
    need = (True,) * 5
    with matmul_mode("fp32"):
        for name, B, T, G, I, H in CASES:
            R = B * T
            d_gx = (torch.randn(R, G * H, generator=gen) / (G * H) ** 0.5).cuda()
            d_gh = d_gx if G != 3 else (torch.randn(R, G * H, generator=gen) / (G * H) ** 0.5).cuda()
            x, h = torch.randn(R, I, generator=gen).cuda(), torch.randn(R, H, generator=gen).cuda()
            w_ih = (torch.randn(G * H, I, generator=gen) / I ** 0.5).cuda()
            wide = [t.double() for t in (d_gx, d_gh, x, h, w_ih)]
            want = gradients.reference_gradients(wide[0], wide[0] if d_gh is d_gx else wide[1], *wide[2:], need)

            def grad_error(got):
                return max(relative_error(getattr(got, f), getattr(want, f)) for f in ("dx", "dw_ih", "dw_hh"))

            row = {"case": name, "rows": R, "gates": G, "input_size": I, "hidden_size": H,
                   "grad_flop": 2 * R * G * H * (2 * I + H), "proj_flop": 2 * R * G * H * I}
            args = (d_gx, d_gh, x, h, w_ih, need)
            timed(row, "grad fused", lambda: fused(*args), grad_error)
            timed(row, "grad split", lambda: gradients.split_gradients(*args), grad_error)
            timed(row, "grad torch", lambda: gradients.reference_gradients(*args), grad_error)
            x3 = x.view(T, B, I)
            want_p = (x.double() @ w_ih.double().t()).view(T, B, -1)

            def proj_error(got):
                return relative_error(got, want_p)

            timed(row, "proj tiles", lambda: projection.our_projection(x3, w_ih, "tf32x3", False), proj_error)
            timed(row, "proj cublas", lambda: F.linear(x3, w_ih), proj_error)
            timed(row, "proj split", lambda: projection.split_projection(x3, w_ih), proj_error)
            rows.append(row)
            forms = [k[3:] for k in row if k.startswith("us ")]
            print(f"{name} ({row['grad_flop']:.1e}, {row['proj_flop']:.1e}): "
                  + " ".join(f"{f}={row[f'us {f}']:.1f}/{row[f'host {f}']:.1f}" for f in forms)
                  + "".join(f" {k}={v}" for k, v in row.items() if k.startswith("failed")), flush=True)
            del d_gx, d_gh, x, h, w_ih, wide, want
            torch.cuda.empty_cache()
    write_rows(out, rows)


if __name__ == "__main__":
    main(sys.argv[1])
