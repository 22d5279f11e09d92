"""The TF32 layer-normalized LSTM's training step, B32 H64 T30: per-tensor errors against float64 with
the reverse recurrence's products in TF32 (as planned) and in 3xTF32 (backward_precision patched)."""
import sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks"), str(ROOT / "ab")]
import warnings
import torch
from diag179 import errors  # noqa: E402  (runs nothing at import: guarded below)
from rnnbench import nn as rnn
from rnnbench.ops import plans, recurrence
from rnnbench.precision import matmul_mode
warnings.simplefilter("ignore")

def run(tag):
    torch.manual_seed(0)
    normed = rnn.LSTM(64, 64, backend="torch", layer_norm=True).to("cuda")
    forms = {"loop-ln": normed, "triton-ln": rnn.LSTM(64, 64, backend="triton", layer_norm=True),
             "triton": rnn.LSTM(64, 64, backend="triton")}
    for name, m in forms.items():
        if name != "loop-ln":
            m.to("cuda").load_state_dict(normed.state_dict(), strict=False)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(30, 32, 64, generator=gen, device="cuda").requires_grad_()
    hx = tuple((torch.randn(1, 32, 64, generator=gen, device="cuda") * 0.5).requires_grad_() for _ in range(2))
    with matmul_mode("tf32"):
        errs = {f: errors(m, x, hx, f.endswith("-ln")) for f, m in forms.items()}
    print(f"\n## {tag}: " + "  ".join(f"{f} max {max(e.values()):.2e}" for f, e in errs.items()))
    for n in errs["loop-ln"]:
        print(f"{n:24s}" + "".join(f"{errs[f].get(n, float('nan')):11.2e}" for f in errs))

run("backward TF32 (planned)")
original = plans.backward_precision
patched = lambda precision, gates: "tf32x3" if precision == "tf32" else original(precision, gates)
plans.backward_precision = recurrence.backward_precision = patched
recurrence._cached_launch.cache_clear(); recurrence._cached_choice.cache_clear(); recurrence._cached_plan.cache_clear()
run("backward 3xTF32 (patched)")
