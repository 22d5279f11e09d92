"""The forward kernel's step when it saves for the backward, with ``x_proj`` in the weights' dtype
or in fp32 (one GPU, kernels alone, default plans).

    PYTHONPATH=src python3 benchmarks/results/h200/saving-forward/probes/save_forward.py OUT_DIR

Why: in a training step at batch 1024, hidden 2048 in bf16 (``train-parts``) the sliced forward
took 128 us a step against 87 when it does not save (plan_sweep), the GRU's 116 against 75. Compiled
for sm_90 (Triton 3.6) the saving LSTM kernel spills 1,568 bytes a thread against 320 and runs its
activations twice (576 tanh.approx against 320): its fp32 stores of the gates take another layout
than the 16-bit loads of x_proj and stores of h, and Triton's layout pass computes the gates in
both. With x_proj in fp32 it spilled 440 bytes and ran them once. This times that, per step (the
difference of ``seq_len`` and ``2 * seq_len`` steps, replayed from a CUDA graph, as plan_sweep.py).
Writes ``OUT_DIR/save_forward.jsonl`` (an environment record first) and prints a table.
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
         ("gru", 512, 4096, "bf16"), ("lstm", 1024, 1024, "bf16"), ("lstm", 256, 4096, "bf16"),
         ("lstm", 1024, 2048, "fp16"), ("lstm", 1024, 2048, "tf32")]
SEQ_LEN = 30


def forward(cell, b, h, td, precision, x_proj, w_hh, bias, save):
    from rnnbench.ops import recurrence

    def run():
        launch = recurrence._cached_launch(cell, b, h, td, torch.device("cuda"), precision, ())
        return recurrence.recurrence_forward(cell, x_proj, w_hh, bias, bias, None, None, launch, save)

    return run


def main(argv: list[str]) -> int:
    from rnnbench.env import environment
    from rnnbench.ops.plans import dot_precision
    from rnnbench.precision import matmul_mode
    from triton_dev import _graph_ms, _torch_dtype, kernel_tensors

    if len(argv) != 1:  # (one line, no traceback)
        print("usage: python3 save_forward.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "save_forward.jsonl", "w") as f:
        f.write(json.dumps({"record": "env", **environment()}) + "\n")
        print("case | us a step: no save | save | save, x_proj fp32 | no save, x_proj fp32")
        for cell, b, h, dtype in CASES:
            td = _torch_dtype(dtype)
            with matmul_mode(dtype):
                precision = dot_precision(td)
                w_hh, bias, x32 = kernel_tensors(cell, b, h, td, 2 * SEQ_LEN)
                row = {"cell": cell, "batch_size": b, "hidden_size": h, "dtype": dtype, "seq_len": SEQ_LEN}
                for save, x_dtype in ((False, td), (True, td), (True, torch.float32), (False, torch.float32)):
                    ms = [_graph_ms(forward(cell, b, h, td, precision, x32[:t].to(x_dtype).contiguous(), w_hh, bias,
                                            save)) for t in (SEQ_LEN, 2 * SEQ_LEN)]
                    key = f"{'save' if save else 'no_save'}_{str(x_dtype).removeprefix('torch.')}"
                    row[key] = 1e3 * (ms[1] - ms[0]) / SEQ_LEN
                f.write(json.dumps(row) + "\n")
                f.flush()
                vals = [v for k, v in row.items() if k.startswith(("save", "no_save"))]
                print(f"{cell} B{b} H{h} {dtype} | " + " | ".join(f"{v:.1f}" for v in vals), flush=True)
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
