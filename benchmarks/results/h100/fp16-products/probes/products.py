"""Strict fp32's large products as the tree on PYTHONPATH runs them, for two trees side by side
(3xTF32 split products before, 3xFP16 after): a layer's three gradient products with their splits
(``gradients.split_gradients``, and the torch calls), and its input projection (our 3xTF32 tiles,
``projection.our_projection``; cuBLAS; the tree's ``split_projection`` where it has one).

    PYTHONPATH=TREE/src python3 products.py OUT.jsonl LABEL

Device µs a call from CUDA graphs of CALLS calls (``measure``'s median); each form checked against
float64 first (the largest relative error of its products)."""

import json
import sys

import torch
from torch.nn import functional as F

from rnnbench.ops import gradients, projection
from rnnbench.precision import matmul_mode
from rnnbench.timing import measure
from rnnbench.verify import relative_error
from rnnbench.workload import graphed

CALLS = 10
# (case, T*B rows, gates, input_size, hidden_size): theano's depth-1 layers at hidden 512 and 1024,
# batch 32 and 128, 30 steps; its 200 steps at batch 128; glample's at hidden 500 (batch 20).
CASES = [("lstm B128 H1024", 3840, 4, 1024, 1024), ("gru B128 H1024", 3840, 3, 1024, 1024),
         ("lstm B32 H1024", 960, 4, 1024, 1024), ("gru B32 H1024", 960, 3, 1024, 1024),
         ("lstm B128 H512", 3840, 4, 512, 512), ("gru B128 H512", 3840, 3, 512, 512),
         ("lstm B32 H512", 960, 4, 512, 512), ("gru B32 H512", 960, 3, 512, 512),
         ("lstm T200 B128 H1024", 25600, 4, 1024, 1024),
         ("lstm glample H500", 600, 4, 500, 500), ("rnn glample H500", 600, 1, 500, 500)]


def device_us(fn):
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, "cuda", budget_s=0.3).median_ms * 1e3 / CALLS


def timed(row, form, fn, check):
    try:
        row[f"error {form}"] = check(fn())
        row[f"us {form}"] = device_us(fn)
    except Exception as e:  # noted, the rest go on
        row[f"failed {form}"] = f"{type(e).__name__}: {str(e)[:200]}"


def main(out, label):
    rows = []
    gen = torch.Generator().manual_seed(0)
    need = (True,) * 5
    with matmul_mode("fp32"):
        for name, R, G, I, H in CASES:
            d_gx = (torch.randn(R, G * H, generator=gen) / (G * H) ** 0.5).cuda()
            d_gh = d_gx if G != 3 else (torch.randn(R, G * H, generator=gen) / (G * H) ** 0.5).cuda()
            x, h = torch.randn(R, I, generator=gen).cuda(), torch.randn(R, H, generator=gen).cuda()
            w_ih = (torch.randn(G * H, I, generator=gen) / I ** 0.5).cuda()
            wide = [t.double() for t in (d_gx, d_gh, x, h, w_ih)]
            want = gradients.reference_gradients(wide[0], wide[0] if d_gh is d_gx else wide[1], *wide[2:], need)

            def grad_error(got):
                return max(relative_error(getattr(got, f), getattr(want, f)) for f in ("dx", "dw_ih", "dw_hh"))

            row = {"tree": label, "case": name, "rows": R, "gates": G, "input_size": I, "hidden_size": H}
            args = (d_gx, d_gh, x, h, w_ih, need)
            timed(row, "grad split", lambda: gradients.split_gradients(*args), grad_error)
            timed(row, "grad torch", lambda: gradients.reference_gradients(*args), grad_error)
            x3 = x.view(R // 20 if "glample" in name else R // (128 if "B128" in name else 32), -1, I)
            want_p = (x.double() @ w_ih.double().t()).view(x3.shape[0], x3.shape[1], -1)

            def proj_error(got):
                return relative_error(got, want_p)

            timed(row, "proj tiles", lambda: projection.our_projection(x3, w_ih, "tf32x3", False), proj_error)
            timed(row, "proj cublas", lambda: F.linear(x3, w_ih), proj_error)
            if hasattr(projection, "split_projection"):
                timed(row, "proj split", lambda: projection.split_projection(x3, w_ih), proj_error)
            rows.append(row)
            forms = [k[3:] for k in row if k.startswith("us ")]
            print(f"{label} {name}: " + " ".join(f"{f}={row[f'us {f}']:.1f} ({row[f'error {f}']:.1e})" for f in forms)
                  + "".join(f" {k}={v}" for k, v in row.items() if k.startswith("failed")), flush=True)
            del d_gx, d_gh, x, h, w_ih, wide, want
            torch.cuda.empty_cache()
    with open(out, "a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
