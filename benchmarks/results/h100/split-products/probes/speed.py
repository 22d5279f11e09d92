"""Strict fp32 products at the seed suites' large shapes: cuBLAS (IEEE, ``torch.mm`` with TF32 off)
against ``ops/split_products.product`` (3xTF32 from operands split once) in several tilings, and the
projection's tile launch (``tl.dot``'s ``tf32x3``, ``projection.our_projection``). On a GPU, from the
repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/split-products/probes/speed.py OUT.jsonl

Device µs a call: a CUDA graph of 20 calls replayed (no host time; ``rnnbench.timing.measure``,
budget 0.3 s a form), each form first checked against float64 on the same operands (largest
element error over the largest magnitude, ``rnnbench.verify.relative_error``). ``split+product``
includes the two split launches; ``product`` takes operands split beforehand."""
import json
import sys

import torch

from rnnbench.env import environment
from rnnbench.ops import projection, split_products as sp
from rnnbench.ops.products import Tiles
from rnnbench.precision import matmul_mode
from rnnbench.timing import measure
from rnnbench.verify import relative_error
from rnnbench.workload import graphed

CALLS = 20
# (name, M, N, K, A stored transposed, B stored transposed): the input projection x W_ih^T (B = W_ih
# stored [GH, I]), then a layer's input gradient d_gx W_ih and weight gradient d_gx^T x.
CASES = [("proj lstm B32 H512", 960, 2048, 512, False, True),
         ("proj lstm B128 H512", 3840, 2048, 512, False, True),
         ("proj gru B128 H512", 3840, 1536, 512, False, True),
         ("proj lstm B32 H1024", 960, 4096, 1024, False, True),
         ("proj gru B32 H1024", 960, 3072, 1024, False, True),
         ("proj lstm B128 H1024", 3840, 4096, 1024, False, True),
         ("proj gru B128 H1024", 3840, 3072, 1024, False, True),
         ("proj lstm T200 B128 H1024", 25600, 4096, 1024, False, True),
         ("dx lstm B128 H1024", 3840, 1024, 4096, False, False),
         ("dW lstm B128 H1024", 4096, 1024, 3840, True, False),
         ("dx lstm B32 H512", 960, 512, 2048, False, False),
         ("dW lstm B32 H512", 2048, 512, 960, True, False)]
TILINGS = {"128x128x32w8s3": Tiles(128, 128, 32, 8, 3), "128x128x16w8s4": Tiles(128, 128, 16, 8, 4),
           "128x128x32w4s3": Tiles(128, 128, 32, 4, 3), "128x64x32w4s3": Tiles(128, 64, 32, 4, 3),
           "64x128x32w4s3": Tiles(64, 128, 32, 4, 3), "128x256x16w8s3": Tiles(128, 256, 16, 8, 3),
           "64x64x32w4s3": Tiles(64, 64, 32, 4, 3)}


def device_us(fn):
    replay = graphed(lambda: tuple(fn() for _ in range(CALLS)))
    return measure(replay, "cuda", budget_s=0.3).median_ms * 1e3 / CALLS


def operand(rows, cols, transposed, gen):
    t = torch.randn((cols, rows) if transposed else (rows, cols), generator=gen) / cols ** 0.5
    t = t.cuda()
    return t.t() if transposed else t


def main(out):
    rows = [{"record": "env", **environment()}]
    gen = torch.Generator().manual_seed(0)
    with matmul_mode("fp32"):
        for name, M, N, K, a_t, b_t in CASES:
            a, b = operand(M, K, a_t, gen), operand(K, N, b_t, gen)
            want = a.double() @ b.double()
            forms = {"cublas": lambda: torch.mm(a, b)}
            if name.startswith("proj"):
                x3 = a.view(M // 32, 32, K) if M % 32 == 0 else a.unsqueeze(1)
                forms["tf32x3-tiles"] = lambda: projection.our_projection(x3, b.t(), "tf32x3", False).view(M, N)
            pa, pb = sp.split(a), sp.split(b)
            for tname, tiles in TILINGS.items():
                forms[f"product {tname}"] = (lambda t: lambda: sp.product(pa, pb, t))(tiles)
            forms["split+product"] = lambda: sp.product(a, b)
            row = {"case": name, "M": M, "N": N, "K": K, "gflop": 2 * M * N * K / 1e9}
            for form, fn in forms.items():
                try:
                    row[f"error {form}"] = relative_error(fn(), want)
                    row[f"us {form}"] = device_us(fn)
                except Exception as e:  # a tiling that does not compile (shared memory): noted, the rest go on
                    row[f"failed {form}"] = f"{type(e).__name__}: {str(e)[:200]}"
            rows.append(row)
            cells = " ".join(f"{f}={row[f'us {f}']:.1f}" if f"us {f}" in row else f"{f}=FAILED" for f in forms)
            print(f"{name} ({row['gflop']:.1f} GFLOP): {cells}", flush=True)
            print("   errors: " + " ".join(f"{f}={row[f'error {f}']:.1e}" for f in forms if f"error {f}" in row),
                  flush=True)
    with open(out, "w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
