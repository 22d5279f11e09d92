"""A layer's strict fp32 input and weight gradients (``dx = d_gx W_ih``, ``dW_ih = d_gx^T x``,
``dW_hh = d_gx^T h``) at theano's hidden 512 and 1024: cuBLAS' IEEE products (``torch.mm``, TF32 off,
what the layer runs past our fused launch's limits) against ``ops/split_products`` (3xTF32 from
operands split once, laid out with the reduction contiguous, each chunk summed outside the tensor
core), with its five splits (``d_gx`` as it is and transposed, ``W_ih``, ``x`` and ``h``
transposed) and without them; and the input projection ``x W_ih^T`` by the same against our
projection's tiles. On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/split-products/probes/backward.py OUT.jsonl

Device µs a call (CUDA graphs of 20 calls, ``rnnbench.timing.measure``), each form first checked
against float64 (``rnnbench.verify.relative_error``, the largest of the three gradients')."""
import json
import sys

import torch

from rnnbench.env import environment
from rnnbench.ops import projection, split_products as sp
from rnnbench.precision import matmul_mode
from rnnbench.timing import measure
from rnnbench.verify import relative_error
from rnnbench.workload import graphed

CALLS = 20
# (name, rows N = T*B, gates * hidden GH, input I = hidden H)
CASES = [("lstm B32 H512", 960, 2048, 512), ("lstm B128 H512", 3840, 2048, 512), ("gru B128 H512", 3840, 1536, 512),
         ("lstm B32 H1024", 960, 4096, 1024), ("gru B32 H1024", 960, 3072, 1024),
         ("lstm B128 H1024", 3840, 4096, 1024), ("gru B128 H1024", 3840, 3072, 1024)]


def device_us(fn):
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, "cuda", budget_s=0.3).median_ms * 1e3 / CALLS


def main(out):
    rows = [{"record": "env", **environment()}]
    gen = torch.Generator().manual_seed(0)
    with matmul_mode("fp32"):
        for name, N, GH, I in CASES:
            d_gx, x, h = (torch.randn(N, c, generator=gen).cuda() / c ** 0.5 for c in (GH, I, I))
            w_ih = torch.randn(GH, I, generator=gen).cuda() / I ** 0.5
            want = [d_gx.double() @ w_ih.double(), d_gx.double().t() @ x.double(), d_gx.double().t() @ h.double()]

            def cublas():
                return torch.mm(d_gx, w_ih), torch.mm(d_gx.t(), x), torch.mm(d_gx.t(), h)

            def ours():
                g, g_t = sp.split(d_gx), sp.split(d_gx, transpose=True)
                return (sp.product(g, sp.split(w_ih, transpose=True)), sp.product(g_t, sp.split(x, transpose=True)),
                        sp.product(g_t, sp.split(h, transpose=True)))

            parts = (sp.split(d_gx), sp.split(d_gx, transpose=True), sp.split(w_ih, transpose=True),
                     sp.split(x, transpose=True), sp.split(h, transpose=True))

            def products_only():
                return sp.product(parts[0], parts[2]), sp.product(parts[1], parts[3]), sp.product(parts[1], parts[4])

            x3 = x.view(30, N // 30, I)
            w_split = sp.split(w_ih)
            forms = {"grad cublas": cublas, "grad ours": ours, "grad products only": products_only,
                     "proj cublas": lambda: (torch.mm(x, w_ih.t()),),
                     "proj tf32x3-tiles": lambda: (projection.our_projection(x3, w_ih, "tf32x3", False).view(N, GH),),
                     "proj ours": lambda: (sp.product(sp.split(x), w_split),)}
            proj_want = [x.double() @ w_ih.double().t()]
            row = {"case": name, "rows": N, "gh": GH, "inputs": I}
            for form, fn in forms.items():
                try:
                    got = fn()
                    row[f"error {form}"] = max(relative_error(g, w) for g, w in
                                               zip(got, proj_want if form.startswith("proj") else want))
                    row[f"us {form}"] = device_us(fn)
                except Exception as e:  # noted, the rest go on
                    row[f"failed {form}"] = f"{type(e).__name__}: {str(e)[:200]}"
            rows.append(row)
            print(f"{name}: " + " ".join(f"{f}={row[f'us {f}']:.1f} ({row[f'error {f}']:.1e})" if f"us {f}" in row
                                         else f"{f}=FAILED {row.get(f'failed {f}')}" for f in forms), flush=True)
    with open(out, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
