"""A layer's strict fp32 input, weight and bias gradients at theano's hidden 512 and 1024: the torch
calls (cuBLAS' IEEE products, what the layer runs past ``EVEN_FUSED_MAX_FLOP``) against our fused
launch (``ops/gradients.layer_gradients``, ``tl.dot``'s ``tf32x3``) in three tilings, by
``benchmarks/products.py``'s ``measure_gradients`` (device µs from CUDA graphs of 20 calls, each form
checked against float64 first). On a GPU, from the repository root::

    PYTHONPATH=src python3 benchmarks/results/h100/split-products/probes/gradients.py OUT.jsonl
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[4]))  # benchmarks/
import products  # noqa: E402

from rnnbench.env import environment  # noqa: E402
from rnnbench.ops import gradients  # noqa: E402
from rnnbench.ops.products import Tiles  # noqa: E402

CASES = [(960, 4, 512, 512), (3840, 4, 512, 512), (3840, 3, 512, 512), (960, 4, 1024, 1024), (960, 3, 1024, 1024),
         (3840, 4, 1024, 1024), (3840, 3, 1024, 1024)]


def tilings():
    return {"32x64x32w4s2": gradients.FP32_TILES, "64x64x32w4s3": Tiles(64, 64, 32, 4, 3),
            "128x128x32w8s3": Tiles(128, 128, 32, 8, 3)}


def main(out):
    products.variants = tilings
    rows = [{"record": "env", **environment()}]
    for rows_, gates, inputs, hidden in CASES:
        row = products.measure_gradients(rows_, gates, inputs, hidden, "fp32", 0.3, "cuda")
        rows.append(row)
        print(f"N{rows_} G{gates} I{inputs} H{hidden}: cublas {row['us_cublas']:.1f} (err {row['error_cublas']:.1e}) "
              + " ".join(f"{n} {row[f'us_{n}']:.1f} (err {row[f'error_{n}']:.1e})" for n in tilings()), flush=True)
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main(sys.argv[1])
