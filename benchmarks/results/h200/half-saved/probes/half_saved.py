"""The sliced 16-bit forward saving its gates in fp32 or in the weights' dtype (``Plan.half_saved``),
and the backward reading each: kernels alone, µs a step, one GPU.

    PYTHONPATH=src python3 benchmarks/results/h200/half-saved/probes/half_saved.py OUT_DIR

Why: saving cost the sliced forward 7-35 µs a step (``../saving-forward``); compiled for sm_90 its
fp32 gate stores beside the 16-bit loads and stores made Triton compute the gates in two register
layouts (1,568 bytes a thread spilled, 576 tanh.approx against 320); stored 16-bit, 424 bytes and
320. The forward's step is the difference of ``SEQ_LEN`` and ``2 * SEQ_LEN`` steps, the backward's
one launch of ``SEQ_LEN`` steps over ``SEQ_LEN``, each replayed from a CUDA graph
(``triton_dev._graph_ms``). Writes ``OUT_DIR/half_saved.jsonl`` (an environment record first) and
prints a table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

CASES = [("lstm", 1024, 2048, "bf16"), ("gru", 1024, 2048, "bf16"), ("lstm", 512, 4096, "bf16"),
         ("gru", 512, 4096, "bf16"), ("lstm", 1024, 1024, "bf16"), ("gru", 1024, 1024, "bf16"),
         ("lstm", 256, 4096, "bf16"), ("lstm", 1024, 2048, "fp16")]
SEQ_LEN = 30
FORMS = {"fp32": (("forward_half_saved", False),), "half": (("forward_half_saved", True),)}


def _launch(cell, b, h, td, precision, form):
    from rnnbench.ops import recurrence

    return recurrence._cached_launch(cell, b, h, td, torch.device("cuda"), precision, FORMS[form])


def main(argv: list[str]) -> int:
    from rnnbench.env import environment
    from rnnbench.ops import recurrence
    from rnnbench.ops.plans import dot_precision
    from rnnbench.precision import matmul_mode
    from triton_dev import _graph_ms, _torch_dtype, kernel_tensors

    if len(argv) != 1:  # (one line, no traceback)
        print("usage: python3 half_saved.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "half_saved.jsonl", "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        print("case | forward saving us a step: fp32 | half | backward us a step: fp32 | half")
        for cell, b, h, dtype in CASES:
            td = _torch_dtype(dtype)
            row = {"cell": cell, "batch_size": b, "hidden_size": h, "dtype": dtype, "seq_len": SEQ_LEN}
            with matmul_mode(dtype):
                precision = dot_precision(td)
                w_hh, bias, x_proj = kernel_tensors(cell, b, h, td, 2 * SEQ_LEN)
                x_proj = x_proj.to(td)
                gen = torch.Generator(device="cuda").manual_seed(1)
                d_out = torch.randn(SEQ_LEN, b, h, device="cuda", generator=gen).to(td)
                for form in FORMS:
                    launch = _launch(cell, b, h, td, precision, form)
                    row[f"plan_{form}"] = f"bb{launch.forward.block_b} bh{launch.forward.block_h} " \
                                          f"pieces {launch.forward.pieces} half_saved {launch.forward.half_saved}"

                    def forward(t, launch=launch):
                        xp = x_proj[:t].contiguous()
                        return lambda: recurrence.recurrence_forward(cell, xp, w_hh, bias, bias, None, None, launch,
                                                                     True)

                    ms = [_graph_ms(forward(t)) for t in (SEQ_LEN, 2 * SEQ_LEN)]
                    row[f"forward_{form}"] = 1e3 * (ms[1] - ms[0]) / SEQ_LEN
                    h_buf, _, _, saved, c_buf = forward(SEQ_LEN)()
                    row[f"saved_dtype_{form}"] = str(saved.dtype).removeprefix("torch.")
                    ms = _graph_ms(lambda launch=launch, saved=saved, c_buf=c_buf, h_buf=h_buf: recurrence
                                   .recurrence_backward(cell, d_out, None, None, saved, c_buf, h_buf, w_hh, launch))
                    row[f"backward_{form}"] = 1e3 * ms / SEQ_LEN
                    del h_buf, saved, c_buf
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"{cell} B{b} H{h} {dtype} | {row['forward_fp32']:.1f} | {row['forward_half']:.1f} | "
                  f"{row['backward_fp32']:.1f} | {row['backward_half']:.1f}", flush=True)
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
